"""Subclassing a layer, a module with its own train(...) method, Module.apply,
register_buffer, and saving/loading a state_dict with torch.save/torch.load."""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn


class ScaledLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, scale=0.5):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.scale = scale

    def forward(self, x):
        return super().forward(x) * self.scale


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = ScaledLinear(3, 8, dtype=torch.float64)
        self.out = nn.Linear(8, 1, dtype=torch.float64)
        self.skip = nn.Identity()
        self.register_buffer("steps", torch.tensor(0))

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x))) + self.skip(x[:, :1])

    def train(self, inputs, targets, epochs=20, lr=0.05):
        """Its own training loop (this overrides nn.Module.train(mode), as PyTorch allows)."""
        optimizer = torch.optim.SGD(self.parameters(), lr=lr)
        for _ in range(epochs):
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(self(inputs), targets)
            loss.backward()
            optimizer.step()
            self.steps += 1
        return loss.item()


def init(m):
    if isinstance(m, nn.Linear):
        with torch.no_grad():
            m.weight.copy_(torch.linspace(-0.5, 0.5, m.weight.numel()).view_as(m.weight))
            nn.init.zeros_(m.bias)


inputs = torch.linspace(-1, 1, 30, dtype=torch.float64).reshape(10, 3)
targets = (inputs**2).sum(dim=1, keepdim=True)

model = Regressor()
model.apply(init)
print("modules", [name for name, _ in model.named_modules()])
print("hidden is a Linear", isinstance(model.hidden, nn.Linear), model.hidden)
print("loss", f"{model.train(inputs, targets):.6f}", "steps", model.steps.item())

with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "model.pt")
    torch.save(model.state_dict(), path)
    restored = Regressor()
    result = restored.load_state_dict(torch.load(path))
    print("keys", sorted(restored.state_dict().keys()), "missing", list(result.missing_keys))
with torch.no_grad():
    same = torch.equal(model(inputs), restored(inputs))
print("restored equal", same, "steps", restored.steps.item())
