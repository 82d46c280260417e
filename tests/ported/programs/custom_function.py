"""Custom autograd Functions (one that saves its output, one with a non-tensor argument and
needs_input_grad), checked with gradcheck, then used in a fit and a clamp."""

import torch


class Squash(torch.autograd.Function):
    """x / (1 + |x|), whose derivative 1 / (1 + |x|)^2 = (1 - |y|)^2 needs only the output,
    so the output is what is saved."""

    @staticmethod
    def forward(ctx, x):
        y = x / (1 + x.abs())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return grad_y * (1 - y.abs()) ** 2


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


wide = torch.linspace(-2.5, 2.5, 7, dtype=torch.double, requires_grad=True)
print("gradcheck", torch.autograd.gradcheck(Squash.apply, (wide,)))
narrow = torch.linspace(-0.9, 0.9, 7, dtype=torch.double, requires_grad=True)
scale = torch.tensor(1.7, dtype=torch.double, requires_grad=True)
print(
    "gradcheck2",
    torch.autograd.gradcheck(lambda x, s: ClampedScale.apply(x, s, 1.2), (narrow, scale)),
)

# fit a step-like curve with an offset and scaled Squash
x = torch.linspace(-3, 3, 1200)
target = torch.tanh(2 * x - 0.5)
offset, height, slope, shift = (torch.full((), v, requires_grad=True) for v in (0.1, 0.8, 1.0, 0.0))
for step in range(400):
    fitted = offset + height * Squash.apply(slope * x + shift)
    loss = (fitted - target).pow(2).mean()
    if step % 100 == 99:
        print(step, f"{loss.item():.5f}")
    loss.backward()
    with torch.no_grad():
        for p in (offset, height, slope, shift):
            p -= 0.5 * p.grad
            p.grad = None
print("fit", [f"{p.item():.4f}" for p in (offset, height, slope, shift)])

s = torch.tensor(0.5, requires_grad=True)
z = ClampedScale.apply(torch.tensor([-3.0, 1.0, 4.0]), s, 1.0)
z.sum().backward()
print("clamped", z.tolist(), "scale grad", s.grad.item())
