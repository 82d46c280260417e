"""The models that the tests of moving models out of tensorgrad (safetensors, ONNX) use, and
their PyTorch twins: the same layers in the same order, so that state dicts line up."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.training.models import build_cnn, build_model


def mlp() -> nn.Module:
    """The default MLP recipe's shape (smaller hidden layers, so the tests stay fast)."""
    return build_model(784, (64, 32), 10, 0.2)


def cnn() -> nn.Module:
    """The CNN recipe: conv → max-pool → batch norm → ReLU blocks, dropout, two Linears."""
    return build_cnn((1, 28, 28), (8, 16), 10, 0.25)


def norm_gelu() -> nn.Module:
    """LayerNorm and both GELUs, with BatchNorm1d buffers in the middle."""
    return nn.Sequential(
        nn.Linear(12, 16),
        nn.LayerNorm(16),
        nn.GELU(),
        nn.Linear(16, 16),
        nn.BatchNorm1d(16),
        nn.GELU(approximate="tanh"),
        nn.Linear(16, 4),
    )


MODELS = {"mlp": (mlp, (784,)), "cnn": (cnn, (1, 28, 28)), "norm_gelu": (norm_gelu, (12,))}


def sample(name: str, batch: int, seed: int = 0) -> np.ndarray:
    shape = MODELS[name][1]
    return np.random.default_rng(seed).standard_normal((batch, *shape)).astype(np.float32)


def trained(name: str, steps: int = 2) -> nn.Module:
    """The model after a few training steps (batch norm's running statistics move away from
    0 and 1, and ``num_batches_tracked`` counts), then in eval mode."""
    tg.manual_seed(0)
    model = MODELS[name][0]()
    opt = tg.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        x = tg.tensor(sample(name, 8, seed=step + 1))
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def torch_twin(model: nn.Module) -> Any:
    """The PyTorch module with the same layers as the tensorgrad ``Sequential`` ``model``."""
    import torch

    layers = []
    for layer in model:
        kind = type(layer).__name__
        if kind == "Linear":
            layers.append(torch.nn.Linear(layer.in_features, layer.out_features))
        elif kind == "Conv2d":
            layers.append(
                torch.nn.Conv2d(
                    layer.in_channels,
                    layer.out_channels,
                    layer.kernel_size,
                    padding=layer.padding,
                    bias=layer.bias is not None,
                )
            )
        elif kind == "BatchNorm1d":
            layers.append(torch.nn.BatchNorm1d(layer.num_features))
        elif kind == "BatchNorm2d":
            layers.append(torch.nn.BatchNorm2d(layer.num_features))
        elif kind == "LayerNorm":
            layers.append(torch.nn.LayerNorm(layer.normalized_shape))
        elif kind == "GELU":
            layers.append(torch.nn.GELU(approximate=layer.approximate))
        elif kind == "MaxPool2d":
            layers.append(torch.nn.MaxPool2d(layer.kernel_size))
        elif kind == "Dropout":
            layers.append(torch.nn.Dropout(layer.p))
        else:
            layers.append(getattr(torch.nn, kind)())
    return torch.nn.Sequential(*layers)


# ----------------------------------------------------------------------------- sequence models
def sequence_classes(lib: Any) -> dict[str, type]:
    """The sequence models, written once against ``lib`` (``tensorgrad`` or ``torch``): the
    same code makes a model and its PyTorch twin, as a port by changing imports would.

    - ``CharGPT``: examples/char_gpt.py's GPT (token and position embeddings, pre-LayerNorm
      blocks, ``scaled_dot_product_attention(is_causal=True)``, tanh-GELU MLP, a final
      LayerNorm and a head tied to the token embedding);
    - ``MinGPT``: GPT-2's checkpoint names as minGPT and nanoGPT use them
      (``transformer.wte``/``wpe``/``h``/``ln_f``, ``lm_head``), attention written out with a
      ``tril`` buffer cut to the length and ``masked_fill``, a tanh GELU written out with
      ``pow``, the embedding tied to the head's weight;
    - ``WordLM``: a word-level LSTM language model: Embedding → LSTM → Linear, dropout
      between them (the shape of PyTorch's word_language_model example).
    """
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd: int, n_head: int) -> None:
            super().__init__()
            self.n_head = n_head
            self.qkv = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            heads = self.n_head
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
            return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self, n_embd: int, n_head: int) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention(n_embd, n_head)
            self.mlp = nn.Sequential(
                nn.Linear(n_embd, 4 * n_embd),
                nn.GELU(approximate="tanh"),
                nn.Linear(4 * n_embd, n_embd),
                nn.Dropout(0.1),
            )

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class CharGPT(nn.Module):
        def __init__(self, vocab=11, block_size=8, n_layer=2, n_head=2, n_embd=16) -> None:
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.blocks = nn.Sequential(*[Block(n_embd, n_head) for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx):
            t = idx.shape[1]
            x = self.wte(idx) + self.wpe(lib.arange(t))
            return self.head(self.ln_f(self.blocks(x)))

    class TanhGELU(nn.Module):
        """GELU's tanh approximation written out, so that its graph holds a Pow."""

        def forward(self, x):
            cubic = x + 0.044715 * lib.pow(x, 3.0)
            return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi) * cubic))

    class MaskedAttention(nn.Module):
        """Attention written out: the scores, a lower-triangular buffer cut to the length
        for ``masked_fill``, the softmax, and dropout on the weights and the output."""

        def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
            super().__init__()
            self.n_head = n_head
            self.to_qkv = nn.Linear(n_embd, 3 * n_embd)
            self.to_out = nn.Linear(n_embd, n_embd)
            self.weights_dropout, self.out_dropout = nn.Dropout(0.1), nn.Dropout(0.1)
            causal = lib.tril(lib.ones(block_size, block_size))
            self.register_buffer("causal", causal.view(1, 1, block_size, block_size))

        def forward(self, x):
            batch, time, width = x.size()
            size = width // self.n_head

            def by_head(z):  # (batch, time, width) -> (batch, heads, time, size)
                return z.view(batch, time, self.n_head, size).transpose(1, 2)

            q, k, v = map(by_head, self.to_qkv(x).split(width, dim=2))
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(size)
            scores = scores.masked_fill(self.causal[:, :, :time, :time] == 0, float("-inf"))
            mixed = self.weights_dropout(F.softmax(scores, dim=-1)) @ v
            merged = mixed.transpose(1, 2).contiguous().view(batch, time, width)
            return self.out_dropout(self.to_out(merged))

    class MaskedBlock(nn.Module):
        def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
            super().__init__()
            self.attn_norm = nn.LayerNorm(n_embd)
            self.attn = MaskedAttention(n_embd, n_head, block_size)
            self.mlp_norm = nn.LayerNorm(n_embd)
            self.mlp = nn.ModuleDict(
                dict(
                    widen=nn.Linear(n_embd, 4 * n_embd),
                    act=TanhGELU(),
                    narrow=nn.Linear(4 * n_embd, n_embd),
                    dropout=nn.Dropout(0.1),
                )
            )

        def forward(self, x):
            x = x + self.attn(self.attn_norm(x))
            hidden = self.mlp.act(self.mlp.widen(self.mlp_norm(x)))
            return x + self.mlp.dropout(self.mlp.narrow(hidden))

    class MinGPT(nn.Module):
        def __init__(self, vocab=13, block_size=8, n_layer=2, n_head=2, n_embd=16) -> None:
            super().__init__()
            blocks = [MaskedBlock(n_embd, n_head, block_size) for _ in range(n_layer)]
            self.transformer = nn.ModuleDict(
                dict(
                    wte=nn.Embedding(vocab, n_embd),
                    wpe=nn.Embedding(block_size, n_embd),
                    drop=nn.Dropout(0.1),
                    h=nn.ModuleList(blocks),
                    ln_f=nn.LayerNorm(n_embd),
                )
            )
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # the embedding takes the head's

        def forward(self, idx):
            positions = lib.arange(idx.size(1)).unsqueeze(0)
            parts = self.transformer
            x = parts.drop(parts.wte(idx) + parts.wpe(positions))
            for block in parts.h:
                x = block(x)
            return self.lm_head(parts.ln_f(x))

    class WordLM(nn.Module):
        """Words in, the next word's log-probabilities out, through a two-layer LSTM."""

        def __init__(self, vocab=17, width=8, hidden=12, layers=2) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.lstm = nn.LSTM(width, hidden, layers, dropout=0.2)
            self.to_vocab = nn.Linear(hidden, vocab)
            self.dropout = nn.Dropout(0.2)

        def forward(self, words, h0, c0):
            states, (h_n, c_n) = self.lstm(self.dropout(self.embed(words)), (h0, c0))
            scores = self.to_vocab(self.dropout(states))
            flat = scores.view(-1, scores.size(-1))
            return F.log_softmax(flat, dim=1), h_n, c_n

    return {"CharGPT": CharGPT, "MinGPT": MinGPT, "WordLM": WordLM}


def tokens(shape: tuple[int, ...], vocab: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, vocab, shape).astype(np.int64)


def sequence_model(name: str) -> nn.Module:
    """A tensorgrad sequence model after two AdamW steps, in eval mode."""
    tg.manual_seed(0)
    model = sequence_classes(tg)[name]()
    opt = tg.optim.AdamW(model.parameters(), lr=0.01)
    for step in range(2):
        if name == "WordLM":
            out = model(tg.tensor(tokens((5, 3), 17, step)), tg.zeros(2, 3, 12), tg.zeros(2, 3, 12))
            loss = -out[0].mean()
        else:
            loss = model(tg.tensor(tokens((3, 8), 11, step))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def sequence_inputs(name: str, batch: int, seed: int = 0) -> list[np.ndarray]:
    """Inputs for a sequence model: token indices, and for ``WordLM`` (time-major) the
    initial states too."""
    if name != "WordLM":
        return [tokens((batch, 8), 11, seed)]
    states = np.random.default_rng(seed).standard_normal((2, 2, batch, 12)).astype(np.float32)
    return [tokens((5, batch), 17, seed), states[0], states[1]]
