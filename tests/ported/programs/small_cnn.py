"""A small CNN (Conv2d, BatchNorm2d, MaxPool2d, Adam, a StepLR schedule) on 8x8 digits."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.optim.lr_scheduler import StepLR


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)  # BatchNorm follows
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc(x), dim=1)


def init_weights(m):
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        with torch.no_grad():
            w = torch.cos(torch.arange(m.weight.numel(), dtype=torch.float32) * 1.3)
            m.weight.copy_(w.view(m.weight.shape) * 0.3)
            if m.bias is not None:
                m.bias.fill_(0.01)


digits = load_digits()
images = torch.tensor(digits.images[:480] / 16.0, dtype=torch.float32).unsqueeze(1)
labels = torch.tensor(digits.target[:480], dtype=torch.long)
train_x, train_y, test_x, test_y = images[:400], labels[:400], images[400:], labels[400:]

model = ConvNet()
model.apply(init_weights)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)

for epoch in range(1, 4):
    model.train()
    for i in range(0, 400, 40):
        data, target = train_x[i : i + 40], train_y[i : i + 40]
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(f"epoch {epoch} last batch loss {loss.item():.5f} lr {scheduler.get_last_lr()[0]:.5f}")

model.eval()
with torch.no_grad():
    output = model(test_x)
    test_loss = F.nll_loss(output, test_y, reduction="sum").item() / len(test_y)
    correct = output.argmax(dim=1).eq(test_y).sum().item()
print(f"test loss {test_loss:.5f} accuracy {correct}/{len(test_y)}")
print(f"running mean sum {model.bn1.running_mean.sum().item():.5f}")
