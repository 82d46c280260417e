"""Train a small CNN on MNIST with tensorgrad: the code to copy into your own project.

    python examples/train_mnist_cnn.py                  # MNIST (found or downloaded)
    python examples/train_mnist_cnn.py --dataset fashion-mnist
    python examples/train_mnist_cnn.py --dataset digits --epochs 3   # 8x8 images: seconds

This is the recipe `tensorgrad train --model cnn` runs, written out as plain library calls:
two blocks of convolution, max-pooling, batch normalisation and ReLU, then a small classifier;
AdamW with a one-cycle learning rate, label smoothing, and every training image moved by up
to two pixels at random. Any image size divisible by 4 works.
"""

import argparse
import time

import numpy as np

import tensorgrad as tg
from tensorgrad import nn, optim
from tensorgrad.data import DataLoader, TensorDataset, load_dataset
from tensorgrad.nn import functional as F
from tensorgrad.training.data import random_shift

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dataset", default="mnist", choices=["mnist", "fashion-mnist", "digits"])
parser.add_argument("--data-dir", default=None)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

# 1. Data: (N, 1, H, W) float32 images, standardised with the training statistics.
data = load_dataset(args.dataset, root=args.data_dir)
mean, std = data.train_images.mean(), data.train_images.std()
x_train = ((data.train_images - mean) / std)[:, None]
x_test = ((data.test_images - mean) / std)[:, None]
loader = DataLoader(
    TensorDataset(x_train, data.train_labels), batch_size=128, shuffle=True, seed=args.seed
)

# 2. Model: pooling straight after each convolution, so the batch norm and the ReLU see a
# quarter of the values; then an MLP classifier on the (64, H/4, W/4) features.
tg.manual_seed(args.seed)
height, width = x_train.shape[2:]
model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(32), nn.ReLU(),
    nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(64), nn.ReLU(),
    nn.Flatten(), nn.Dropout(0.25),
    nn.Linear(64 * (height // 4) * (width // 4), 128), nn.ReLU(), nn.Linear(128, data.num_classes),
)  # fmt: skip
optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=3e-3, epochs=args.epochs, steps_per_epoch=len(loader)
)
shifts = np.random.default_rng(args.seed)  # augmentation: random moves of up to 2 pixels

# 3. The training loop: zero the gradients, forward, backward, step.
for epoch in range(1, args.epochs + 1):
    model.train()
    started = time.perf_counter()
    for x, y in loader:
        x = random_shift(x.numpy(), (height, width), 2, fill=-mean / std, generator=shifts)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tg.tensor(x)), y, label_smoothing=0.05)
        loss.backward()
        optimizer.step()
        scheduler.step()
    seconds = time.perf_counter() - started

    # 4. Evaluate on the test set in batches, in eval mode (running batch-norm statistics).
    model.eval()
    with tg.no_grad():
        predicted = np.concatenate(
            [model(tg.tensor(x_test[i : i + 1000])).argmax(dim=1).numpy() for i in
             range(0, len(x_test), 1000)]
        )  # fmt: skip
    accuracy = (predicted == data.test_labels).mean()
    print(
        f"epoch {epoch}: last batch loss {loss.item():.4f}, test accuracy {accuracy:.2%}, "
        f"{seconds:.1f}s"
    )

tg.save(model.state_dict(), "mnist_cnn.pt")
print("saved mnist_cnn.pt")
