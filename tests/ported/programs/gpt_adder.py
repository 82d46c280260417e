"""A small GPT learns to add two 2-digit numbers.

    python gpt_adder.py                                # the fixed check run (see below)
    python gpt_adder.py --train --iters 2000 --seed 1  # a real run from a random start

A problem a + b is 7 tokens: the digits of a and of b, then the digits of the sum from the
ones up (the order a carry travels), so the model writes the sum one digit at a time. The
model is a decoder-only Transformer: token and position embeddings, pre-LayerNorm blocks of
causal self-attention (a lower-triangular mask kept as a buffer) and a GELU feed-forward, a
final LayerNorm and a linear head. AdamW decays the Linear layers' weights only and the
gradient norm is clipped to 1; the answers are the greedy completions of a and b's digits.

The check run (no options) starts from weights set by a formula, without dropout, and takes
its batches in order, so it prints the same numbers wherever it runs: it is how this
program is compared between libraries. ``--train`` starts from random weights, with
dropout, draws its batches at random (with replacement, from a sampler that never runs
out), reports the test score and saves the weights.
"""

import argparse
import math
import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, RandomSampler

CONTEXT = 6  # a problem's 7 tokens, less the last, which is only ever a target
UNSCORED = -1  # the target of a position whose next token is part of the question


class Additions(Dataset):
    """All 10,000 problems, split into 500 to test on and the rest to train on by a fixed
    shuffle (multiplying by 7919, a prime, permutes the residues mod 10,000)."""

    def __init__(self, split):
        shuffled = torch.arange(10_000) * 7919 % 10_000
        self.problems = shuffled[:500] if split == "test" else shuffled[500:]

    def __len__(self):
        return len(self.problems)

    def __getitem__(self, i):
        a, b = divmod(int(self.problems[i]), 100)
        total = a + b
        digits = [a // 10, a % 10, b // 10, b % 10, total % 10, total // 10 % 10, total // 100]
        tokens = torch.tensor(digits, dtype=torch.long)
        targets = tokens[1:].clone()
        targets[:3] = UNSCORED  # the model is not asked to guess the question
        return tokens[:-1], targets


class CausalSelfAttention(nn.Module):
    """Multi-head attention in which a position sees itself and the positions before it."""

    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(width, width)
        # no bias on the keys: it would add the same number to all of a query's scores,
        # which the softmax ignores (its gradient is zero)
        self.key = nn.Linear(width, width, bias=False)
        self.value = nn.Linear(width, width)
        self.out = nn.Linear(width, width)
        self.weights_dropout = nn.Dropout(dropout)
        self.out_dropout = nn.Dropout(dropout)
        self.register_buffer("tril", torch.tril(torch.ones(CONTEXT, CONTEXT)))

    def heads_first(self, x):
        """(batch, time, width) -> (batch, heads, time, width // heads)."""
        batch, time, _ = x.shape
        return x.reshape(batch, time, self.heads, -1).permute(0, 2, 1, 3)

    def forward(self, x):
        batch, time, width = x.shape
        q = self.heads_first(self.query(x))
        k = self.heads_first(self.key(x))
        v = self.heads_first(self.value(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(self.tril[:time, :time] == 0, float("-inf"))
        weights = self.weights_dropout(scores.softmax(dim=-1))
        mixed = (weights @ v).permute(0, 2, 1, 3).reshape(batch, time, width)
        return self.out_dropout(self.out(mixed))


class Block(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = CausalSelfAttention(width, heads, dropout)
        self.feed_forward_norm = nn.LayerNorm(width)
        self.feed_forward = nn.Sequential(
            nn.Linear(width, 4 * width),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * width, width),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.feed_forward_norm(x))


class AdderGPT(nn.Module):
    def __init__(self, layers=3, heads=3, width=48, dropout=0.1, vocab=10):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.position_embedding = nn.Embedding(CONTEXT, width)
        self.embedding_dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([Block(width, heads, dropout) for _ in range(layers)])
        self.final_norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.apply(self.initialise)
        # the layers that write into the residual stream start smaller, so that its
        # variance does not grow with depth
        for block in self.blocks:
            for layer in (block.attention.out, block.feed_forward[2]):
                nn.init.normal_(layer.weight, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def initialise(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1])
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        x = self.embedding_dropout(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x))

    @torch.no_grad()
    def generate(self, tokens, count):
        """Append the ``count`` most likely next tokens, one at a time."""
        for _ in range(count):
            logits = self(tokens[:, -CONTEXT:])
            tokens = torch.cat([tokens, logits[:, -1, :].argmax(dim=-1, keepdim=True)], dim=1)
        return tokens


def parameter_groups(model, weight_decay):
    """AdamW's two groups, by the kind of module a parameter belongs to: the Linear layers'
    weights are decayed; their biases and the LayerNorm and Embedding weights are not."""
    decayed, kept = [], []
    for module in model.modules():
        for name, parameter in module.named_parameters(recurse=False):
            is_matrix = isinstance(module, nn.Linear) and name == "weight"
            (decayed if is_matrix else kept).append(parameter)
    return [
        {"params": decayed, "weight_decay": weight_decay},
        {"params": kept, "weight_decay": 0.0},
    ]


def loss_of(logits, targets):
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=UNSCORED
    )


def training_steps(model, optimizer, loader, count):
    """Take ``count`` optimizer steps on the loader's batches; yield (loss, gradient norm
    before clipping) after each."""
    model.train()
    batches = iter(loader)
    for _ in range(count):
        tokens, targets = next(batches)
        loss = loss_of(model(tokens), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        yield loss.item(), norm.item()


def answers(model, problems):
    """The model's sums for a batch of problems (their first four tokens)."""
    model.eval()
    digits = model.generate(problems[:, :4], 3)[:, 4:]
    return digits[:, 0] + 10 * digits[:, 1] + 100 * digits[:, 2]


def correct_answers(model, dataset):
    right = 0
    for tokens, _ in DataLoader(dataset, batch_size=250):
        a = 10 * tokens[:, 0] + tokens[:, 1]
        b = 10 * tokens[:, 2] + tokens[:, 3]
        right += int((answers(model, tokens) == a + b).sum().item())
    return right


def set_weights_by_formula(model):
    """Weights that are the same in every library: small waves, LayerNorm scales near one."""
    with torch.no_grad():
        for i, (name, parameter) in enumerate(model.named_parameters()):
            k = torch.arange(parameter.numel(), dtype=torch.float32)
            wave = (0.02 * torch.sin(0.61 * k + i)).reshape(parameter.shape)
            parameter.copy_(wave + 1.0 if "norm.weight" in name else wave)


def check_run():
    model = AdderGPT(dropout=0.0)
    set_weights_by_formula(model)
    groups = parameter_groups(model, weight_decay=0.1)
    count = sum(p.numel() for p in model.parameters())
    print(f"parameters {count} decayed {len(groups[0]['params'])} kept {len(groups[1]['params'])}")
    optimizer = torch.optim.AdamW(groups, lr=5e-4, betas=(0.9, 0.95))
    loader = DataLoader(Additions("train"), batch_size=64, shuffle=False)
    for step, (loss, norm) in enumerate(training_steps(model, optimizer, loader, 20)):
        print(f"step {step} loss {loss:.7f} gradient norm {norm:.7f}")
    for name, parameter in model.named_parameters():
        print(f"{name} norm {parameter.norm().item():.7f}")
    test = Additions("test")
    tokens = torch.stack([test[i][0] for i in range(8)])
    sums = answers(model, tokens).tolist()
    problems = [f"{10 * t[0] + t[1]}+{10 * t[2] + t[3]}" for t in tokens.tolist()]
    print("answers", [f"{p}={s}" for p, s in zip(problems, sums)])
    print(f"test score {correct_answers(model, test)}/{len(test)}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "adder.pt")
        torch.save(model.state_dict(), path)
        reloaded = AdderGPT(dropout=0.0)
        reloaded.load_state_dict(torch.load(path))
    same = torch.equal(answers(reloaded, tokens), answers(model, tokens))
    buffers = [name for name, _ in reloaded.named_buffers()]
    print("saved", len(reloaded.state_dict()), "tensors, buffers", buffers)
    print("reloaded answers equal", same)


def train_run(args):
    torch.manual_seed(args.seed)
    model = AdderGPT(dropout=0.1)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters())}")
    optimizer = torch.optim.AdamW(parameter_groups(model, 0.1), lr=5e-4, betas=(0.9, 0.95))
    train = Additions("train")
    sampler = RandomSampler(train, replacement=True, num_samples=int(1e10))
    loader = DataLoader(train, batch_size=64, sampler=sampler, num_workers=0)
    for step, (loss, _) in enumerate(training_steps(model, optimizer, loader, args.iters)):
        if step % 10 == 0:
            print(f"iter {step}: train loss {loss:.5f}")
    test = Additions("test")
    right = correct_answers(model, test)
    print(f"test score: {right}/{len(test)} = {100 * right / len(test):.2f}% correct")
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="a small GPT learns 2-digit addition")
    parser.add_argument("--train", action="store_true", help="train from a random start")
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3407)
    parser.add_argument("--out", default="out")
    args = parser.parse_args()
    torch.set_num_threads(1)  # products this small only wait for a second thread
    if args.train:
        train_run(args)
    else:
        check_run()
