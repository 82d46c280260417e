"""Index-heavy code: gather, scatter_add, masked_fill, boolean masks, in-place writes to
slices of tensors in a graph, and a residual block that adds its input in place."""

import torch
import torch.nn as nn
import torch.nn.functional as F

base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 10
w = base.clone().requires_grad_(True)

h = w * 2
h[:, :2] *= 0  # in place, on a tensor that is part of the graph
h[1, 3] = 5.0
mask = h > 1.0
h = h.masked_fill(~mask, -1.0)
picked = h.gather(1, torch.tensor([[0, 5], [1, 4], [2, 3], [5, 0]]))
out = torch.zeros(4, 3).scatter_add(1, torch.tensor([[0, 2], [1, 1], [2, 0], [0, 0]]), picked)
big = h[h > 2.0]  # a boolean mask
rows, cols = torch.tensor([0, 2, 3]), torch.tensor([5, 1, 4])
diagonal = h[rows, cols]
loss = out.sum() + big.pow(2).sum() + (diagonal * torch.tensor([1.0, 2.0, 3.0])).sum()
loss.backward()
print("loss", round(loss.item(), 4))
print("picked", picked.tolist())
print("out", out.tolist())
print("grad", w.grad.tolist())

values, order = base.sum(dim=1).sort(descending=True)
top, where = base.max(dim=0)
print("sort", values.tolist(), order.tolist(), "max", top.tolist(), where.tolist())
print("topk", base.flatten().topk(3).indices.tolist(), "cumsum", base[0].cumsum(0).tolist())
print("select", base.index_select(0, torch.tensor([3, 0])).sum(dim=1).tolist())
print("where", [t.tolist() for t in torch.where(base > 2.0)])
print("chunks", [c.sum().item() for c in base.chunk(3, dim=1)], len(torch.chunk(base, 2)))


class ResidualBlock(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc1 = nn.Linear(n, n)
        self.fc2 = nn.Linear(n, n)

    def forward(self, x):
        identity = x
        out = F.relu(self.fc1(x))
        out = self.fc2(out)
        out += identity
        return F.relu(out)


block = ResidualBlock(6)
with torch.no_grad():
    for p in block.parameters():
        p.copy_(torch.linspace(-0.3, 0.3, p.numel()).view_as(p))
inp = base.clone().requires_grad_()
result = block(inp)
result.sum().backward()
print("block", round(result.sum().item(), 4), [round(v, 4) for v in inp.grad.sum(0).tolist()])
print("fc1 grad", round(block.fc1.weight.grad.abs().sum().item(), 4))
