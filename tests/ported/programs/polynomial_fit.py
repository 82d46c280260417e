"""Gradient descent by hand: a damped oscillation fitted with scalar tensors that require
gradients, stepped in place under no_grad and their gradients dropped (``grad = None``);
then a cubic fitted with one weight vector whose gradient is zeroed in place."""

import torch

device = torch.device("cpu")
t = torch.linspace(0.0, 4.0, 400, device=device, dtype=torch.float32)
signal = 1.5 * torch.exp(-0.6 * t) * torch.cos(2.2 * t)

# a starting guess near the answer: the loss has other valleys further away
amplitude = torch.tensor(1.0, device=device, requires_grad=True)
decay = torch.tensor(0.4, device=device, requires_grad=True)
frequency = torch.tensor(2.0, device=device, requires_grad=True)
parameters = (amplitude, decay, frequency)

step_size = 0.05
for step in range(450):
    guess = amplitude * torch.exp(-decay * t) * torch.cos(frequency * t)
    loss = (guess - signal).pow(2).mean()
    if step % 150 == 149:
        print(step, f"{loss.item():.6f}")
    loss.backward()
    with torch.no_grad():
        for p in parameters:
            p -= step_size * p.grad
            p.grad = None

print("fit", [f"{p.item():.4f}" for p in parameters])

# a cubic in t / 4 with one weight vector: powers by ** and a matrix-vector product
powers = torch.stack([(t / 4) ** k for k in range(4)], dim=1)
w = torch.zeros(4, requires_grad=True)
for _ in range(300):
    loss = ((powers @ w - signal) ** 2).sum() / len(t)
    loss.backward()
    with torch.no_grad():
        w -= 0.5 * w.grad
        w.grad.zero_()
print(f"cubic fit loss {loss.item():.5f} w {[round(v, 4) for v in w.tolist()]}")
