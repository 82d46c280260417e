"""Train a character-level GPT with tensorgrad, then sample from it.

    python examples/char_gpt.py                          # scikit-learn's dataset descriptions
    python examples/char_gpt.py --text input.txt --steps 5000 --n-layer 4 --n-embd 128

The default text ships with scikit-learn, a dependency of tensorgrad's examples: the
descriptions of its bundled datasets (``sklearn/datasets/descr/*.rst``, about 80 kB of
English prose and tables, BSD-licensed). Any UTF-8 file works with ``--text`` (Tiny
Shakespeare is the classic).

The model is minGPT's/nanoGPT's: token and position embeddings, pre-LayerNorm blocks of
causal self-attention (``F.scaled_dot_product_attention(is_causal=True)``, one fused op) and
a GELU MLP, a final LayerNorm and a head tied to the token embedding. AdamW decays the
matrices only; gradients are clipped to norm 1. Sampling divides the logits by the
temperature and keeps the top k before drawing from the softmax.
"""

import argparse
import importlib.util
import math
import time
from pathlib import Path

import numpy as np

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--text", default=None, help="a UTF-8 text file (default: see above)")
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--block-size", type=int, default=64, help="context length")
parser.add_argument("--n-layer", type=int, default=2)
parser.add_argument("--n-head", type=int, default=4)
parser.add_argument("--n-embd", type=int, default=64)
parser.add_argument("--dropout", type=float, default=0.0)
parser.add_argument("--lr", type=float, default=3e-3)
parser.add_argument("--eval-every", type=int, default=250)
parser.add_argument("--eval-batches", type=int, default=20)
parser.add_argument("--sample-chars", type=int, default=300)
parser.add_argument("--temperature", type=float, default=0.8)
parser.add_argument("--top-k", type=int, default=10)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()


# 1. Data: the text as integers, one per distinct character; 90% to train on, 10% to validate.
def default_text() -> str:
    """scikit-learn's dataset descriptions, found without importing scikit-learn."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise SystemExit("char_gpt: scikit-learn is not installed; pass --text FILE")
    folder = Path(spec.origin).parent / "datasets" / "descr"
    files = sorted(folder.glob("*.rst"))
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


if args.text:
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
else:
    text = default_text()
chars = sorted(set(text))
index_of = {c: i for i, c in enumerate(chars)}
data = np.array([index_of[c] for c in text], dtype=np.int64)
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]
print(f"text: {len(text):,} characters, {len(chars)} distinct")
rng = np.random.default_rng(args.seed)


def batch(source: np.ndarray, size: int) -> tuple[tg.Tensor, tg.Tensor]:
    """``size`` random windows of ``block_size`` characters and the characters after each."""
    starts = rng.integers(0, len(source) - args.block_size - 1, size)
    offsets = starts[:, None] + np.arange(args.block_size)
    return tg.tensor(source[offsets]), tg.tensor(source[offsets + 1])


# 2. The model.
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.n_head, self.dropout = n_head, dropout
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: tg.Tensor) -> tg.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x: tg.Tensor) -> tg.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, block_size: int, n_layer: int, n_head: int, n_embd: int):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, args.dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)
        self.head.weight = self.wte.weight  # weight tying
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if p.ndim == 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: tg.Tensor) -> tg.Tensor:
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(tg.arange(t))
        return self.head(self.ln_f(self.blocks(x)))

    @tg.no_grad()
    def generate(self, idx: tg.Tensor, count: int, temperature: float, top_k: int) -> tg.Tensor:
        for _ in range(count):
            logits = self(idx[:, -self.block_size :])[:, -1, :] / temperature
            if top_k:
                kth = logits.topk(min(top_k, logits.shape[-1]))[0][:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            following = tg.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = tg.cat([idx, following], dim=1)
        return idx


tg.manual_seed(args.seed)
model = GPT(len(chars), args.block_size, args.n_layer, args.n_head, args.n_embd)
params = list(model.parameters())
decay = [p for p in params if p.ndim >= 2]
no_decay = [p for p in params if p.ndim < 2]
optimizer = tg.optim.AdamW(
    [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
    lr=args.lr,
    betas=(0.9, 0.99),
)
scheduler = tg.optim.lr_scheduler.CosineAnnealingLR(
    optimizer, T_max=args.steps, eta_min=args.lr / 10
)
print(f"model: {sum(p.numel() for p in params):,} parameters")


@tg.no_grad()
def validation_loss() -> float:
    model.eval()
    losses = []
    for _ in range(args.eval_batches):
        x, y = batch(val_data, args.batch_size)
        losses.append(F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1)).item())
    model.train()
    return float(np.mean(losses))


# 3. Training: forward, loss, backward, clip, step.
started = time.perf_counter()
for step in range(1, args.steps + 1):
    x, y = batch(train_data, args.batch_size)
    loss = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    scheduler.step()
    if step % args.eval_every == 0 or step == args.steps:
        elapsed = time.perf_counter() - started
        print(
            f"step {step}: train loss {loss.item():.4f}, val loss {validation_loss():.4f}, "
            f"{elapsed:.1f} s"
        )

# 4. Sampling, from a newline.
start = tg.tensor([[index_of.get("\n", 0)]])
sample = model.generate(start, args.sample_chars, args.temperature, args.top_k)[0].tolist()
print(f"--- sample (temperature {args.temperature}, top-k {args.top_k}) ---")
print("".join(chars[i] for i in sample[1:]))
print(f"trained {args.steps} steps in {time.perf_counter() - started:.1f} s")
