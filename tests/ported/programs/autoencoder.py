"""An autoencoder: nn.Sequential encoder and decoder, a sigmoid output trained with
binary cross-entropy, Adam and weight decay; reports the reconstruction errors."""

import torch
from sklearn.datasets import load_digits
from torch import nn, optim
from torch.nn import functional as F


class AutoEncoder(nn.Module):
    def __init__(self, n_in=64, n_code=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_in, 16), nn.ReLU(), nn.Linear(16, n_code))
        self.decoder = nn.Sequential(
            nn.Linear(n_code, 16), nn.ELU(), nn.Linear(16, n_in), nn.Sigmoid()
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


model = AutoEncoder()
with torch.no_grad():
    for name, p in model.named_parameters():
        k = torch.arange(p.numel(), dtype=torch.float32)
        p.copy_((torch.sin(k * 0.91 + len(name)) * 0.4).reshape(p.shape))

data = torch.tensor(load_digits().data[:256] / 16.0, dtype=torch.float32)
optimizer = optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-4)

for epoch in range(5):
    epoch_loss = 0.0
    for batch in data.split(64):
        recon = model(batch)
        loss = F.binary_cross_entropy(recon, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    print(f"epoch {epoch} bce {epoch_loss / 4:.6f}")

with torch.no_grad():
    recon = model(data)
    mse = nn.MSELoss()(recon, data).item()
    l1 = nn.L1Loss()(recon, data).item()
    code = model.encoder(data[:2])
print(f"mse {mse:.6f} l1 {l1:.6f}")
print("code", [round(v, 4) for v in code.flatten().tolist()])
