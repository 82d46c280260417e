"""A classifier with a custom nn.Module, a DataLoader and SGD with momentum, written the way
a PyTorch tutorial writes it. Data: scikit-learn's 8x8 digits."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_out)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.dropout(x)
        return self.fc2(x)


def init_weights(model):
    """Weights from a formula, the same in any library (the runs are compared)."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            values = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i)
            p.copy_(values.reshape(p.shape) / math.sqrt(p.shape[-1]))


digits = load_digits()
x = torch.tensor(digits.data[:600] / 16.0, dtype=torch.float32)
y = torch.tensor(digits.target[:600])
x_train, y_train, x_test, y_test = x[:500], y[:500], x[500:], y[500:]

model = Net(64, 32, 10)
init_weights(model)
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=50, shuffle=False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    model.eval()  # dropout off: the two libraries draw different masks
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
    print(f"epoch {epoch} loss {total / len(loader.dataset):.6f}")

model.eval()
with torch.no_grad():
    logits = model(x_test)
    pred = logits.argmax(dim=1, keepdim=True)
    correct = pred.eq(y_test.view_as(pred)).sum().item()
    test_loss = F.cross_entropy(logits, y_test, reduction="sum").item() / y_test.size(0)
print(f"test loss {test_loss:.6f} accuracy {correct}/{len(y_test)}")
