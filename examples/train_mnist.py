"""Train an MLP on MNIST with tensorgrad: the code to copy into your own project.

    python examples/train_mnist.py                  # MNIST (found or downloaded)
    python examples/train_mnist.py --dataset digits --epochs 5

This is the recipe `tensorgrad train` runs, written out as plain library calls. For training
that survives Ctrl-C and crashes, use `tensorgrad train --checkpoint FILE` (then `--resume
FILE`); docs/training.md shows the few lines that make a loop like this one resume exactly.
"""

import argparse
import time

import tensorgrad as tg
from tensorgrad import nn, optim
from tensorgrad.data import DataLoader, TensorDataset, load_dataset
from tensorgrad.nn import functional as F

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dataset", default="mnist", choices=["mnist", "fashion-mnist", "digits"])
parser.add_argument("--data-dir", default=None)
parser.add_argument("--epochs", type=int, default=12)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

# 1. Data: images as float32 in [0, 1], flattened and standardised with the training statistics.
data = load_dataset(args.dataset, root=args.data_dir)
mean, std = data.train_images.mean(), data.train_images.std()
x_train = ((data.train_images - mean) / std).reshape(len(data.train_images), -1)
x_test = ((data.test_images - mean) / std).reshape(len(data.test_images), -1)
loader = DataLoader(
    TensorDataset(x_train, data.train_labels), batch_size=128, shuffle=True, seed=args.seed
)

# 2. Model, optimizer and learning-rate schedule.
tg.manual_seed(args.seed)
model = nn.Sequential(
    nn.Linear(x_train.shape[1], 1024),
    nn.ReLU(),
    nn.Dropout(0.2),
    nn.Linear(1024, 512),
    nn.ReLU(),
    nn.Dropout(0.2),
    nn.Linear(512, data.num_classes),
)
optimizer = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
scheduler = optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=2e-3, epochs=args.epochs, steps_per_epoch=len(loader)
)

# 3. The training loop: zero the gradients, forward, backward, step.
for epoch in range(1, args.epochs + 1):
    model.train()
    started = time.perf_counter()
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
        loss.backward()
        optimizer.step()
        scheduler.step()

    # 4. Evaluate on the test set, without recording a graph.
    model.eval()
    with tg.no_grad():
        predicted = model(tg.tensor(x_test)).argmax(dim=1)
    accuracy = (predicted == tg.tensor(data.test_labels)).float().mean().item()
    print(
        f"epoch {epoch}: last batch loss {loss.item():.4f}, test accuracy {accuracy:.2%}, "
        f"{time.perf_counter() - started:.1f}s"
    )

tg.save(model.state_dict(), "mnist_mlp.pt")
print("saved mnist_mlp.pt")
