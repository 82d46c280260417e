"""Custom autograd Functions the way PyTorch's tutorial writes them, checked with gradcheck,
then used to fit sin(x)."""

import math

import torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class ClampedScale(torch.autograd.Function):
    """Two inputs, a non-tensor argument and needs_input_grad."""

    @staticmethod
    def forward(ctx, x, scale, limit):
        ctx.save_for_backward(x, scale)
        ctx.limit = limit
        return (x * scale).clamp(-limit, limit)

    @staticmethod
    def backward(ctx, grad):
        x, scale = ctx.saved_tensors
        inside = ((x * scale).abs() < ctx.limit).to(grad.dtype)
        grad_x = grad * scale * inside if ctx.needs_input_grad[0] else None
        grad_scale = (grad * x * inside).sum() if ctx.needs_input_grad[1] else None
        return grad_x, grad_scale, None


check_input = torch.linspace(-0.9, 0.9, 7, dtype=torch.double, requires_grad=True)
print("gradcheck", torch.autograd.gradcheck(LegendrePolynomial3.apply, (check_input,)))
scale = torch.tensor(1.7, dtype=torch.double, requires_grad=True)
print(
    "gradcheck2",
    torch.autograd.gradcheck(lambda x, s: ClampedScale.apply(x, s, 1.2), (check_input, scale)),
)

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
a = torch.full((), 0.0, requires_grad=True)
b = torch.full((), -1.0, requires_grad=True)
c = torch.full((), 0.0, requires_grad=True)
d = torch.full((), 0.3, requires_grad=True)
learning_rate = 5e-6
for t in range(500):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, f"{loss.item():.4f}")
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= learning_rate * p.grad
            p.grad = None
print(f"Result: y = {a.item():.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)")

s = torch.tensor(0.5, requires_grad=True)
z = ClampedScale.apply(torch.tensor([-3.0, 1.0, 4.0]), s, 1.0)
z.sum().backward()
print("clamped", z.tolist(), "scale grad", s.grad.item())
