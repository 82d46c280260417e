"""Fitting sin(x) with a cubic by hand, as PyTorch's "learning PyTorch with examples"
tutorial does: tensors with requires_grad, and manual updates under no_grad."""

import math

import torch

dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# the tutorial starts from torch.randn; fixed values keep the two runs comparable
a = torch.tensor(0.1, device=device, dtype=dtype, requires_grad=True)
b = torch.tensor(-0.2, device=device, dtype=dtype, requires_grad=True)
c = torch.tensor(0.3, device=device, dtype=dtype, requires_grad=True)
d = torch.tensor(-0.05, device=device, dtype=dtype, requires_grad=True)

learning_rate = 1e-6
for t in range(600):
    y_pred = a + b * x + c * x**2 + d * x**3
    loss = (y_pred - y).pow(2).sum()
    if t % 200 == 199:
        print(t, f"{loss.item():.4f}")
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item():.5f} + {b.item():.5f} x + {c.item():.5f} x^2 + {d.item():.5f} x^3")

# the same fit with one weight vector, zeroing the gradient in place
features = torch.stack([(x / math.pi) ** k for k in range(4)], dim=1)
w = torch.zeros(4, requires_grad=True)
for _ in range(300):
    loss = ((features @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.5 * w.grad
        w.grad.zero_()
print(f"vector fit loss {loss.item():.5f} w {[round(v, 4) for v in w.tolist()]}")
