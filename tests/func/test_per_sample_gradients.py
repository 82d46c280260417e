"""Per-sample gradients of whole networks, written the torch.func way (``functional_call``
of the module, ``vmap(grad(loss), in_dims=(None, None, 0, 0))``): an MLP, a CNN, LSTM and
GRU classifiers and a small transformer, each equal to a loop of one-sample backward
passes (float64, 1e-10), each running by batching rules alone (no per-sample fallback),
and the CNN's equal to ``torch.func``'s on the same weights."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func, nn
from tensorgrad.core import batching
from tensorgrad.nn import functional as F

BATCH = 4


class SmallCNN(nn.Module):
    """Two 3×3 convolutions, a max-pool, two linear layers, log-softmax (PyTorch's MNIST
    example, shrunk)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 6, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(6 * 4 * 4, 16), nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(tg.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


class Recurrent(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.rnn = getattr(nn, kind)(3, 5, num_layers=2, batch_first=True)
        self.head = nn.Linear(5, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return F.log_softmax(self.head(out[:, -1]), dim=1)


class TinyTransformer(nn.Module):
    """An embedding table, one encoder layer (causal mask), a head over the vocabulary."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, 8)
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 11)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[-1]).double()
        h = self.layer(self.embed(tokens), src_mask=mask, is_causal=True)
        return F.log_softmax(self.head(h), dim=-1)


def _mlp():
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3), nn.LogSoftmax(1))


def _models():
    rng = np.random.default_rng(0)
    return {
        "mlp": (_mlp, rng.standard_normal((BATCH, 6)), rng.integers(0, 3, BATCH)),
        "cnn": (SmallCNN, rng.standard_normal((BATCH, 1, 10, 10)), rng.integers(0, 10, BATCH)),
        "lstm": (lambda: Recurrent("LSTM"), rng.standard_normal((BATCH, 5, 3)),
                 rng.integers(0, 4, BATCH)),
        "gru": (lambda: Recurrent("GRU"), rng.standard_normal((BATCH, 5, 3)),
                rng.integers(0, 4, BATCH)),
        "transformer": (TinyTransformer, rng.integers(0, 11, (BATCH, 6)),
                        rng.integers(0, 11, (BATCH, 6))),
    }  # fmt: skip


MODELS = _models()


def _loss_of(model):
    def loss(params, buffers, sample, target):
        predictions = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        if predictions.ndim == 3:  # a sequence model: one prediction per position
            predictions = predictions.reshape(-1, predictions.shape[-1])
            return F.nll_loss(predictions, target.reshape(-1))
        return F.nll_loss(predictions, target.unsqueeze(0))

    return loss


@pytest.mark.parametrize("name", list(MODELS))
def test_per_sample_gradients_equal_one_backward_per_sample(name):
    make, data, targets = MODELS[name]
    tg.manual_seed(0)
    model = make().double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    loss = _loss_of(model)
    xs = tg.tensor(data)
    ys = tg.tensor(targets)
    before = sum(batching.state.looped.values())
    grads = func.vmap(func.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, xs, ys)
    assert sum(batching.state.looped.values()) == before  # every op by its batching rule
    for b in range(BATCH):
        leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
        loss(leaves, buffers, xs[b], ys[b]).backward()
        for key, leaf in leaves.items():
            assert grads[key].shape == (BATCH, *leaf.shape)
            np.testing.assert_allclose(
                grads[key][b].numpy(), leaf.grad.numpy(), rtol=1e-10, atol=1e-10
            )


def test_per_sample_gradients_of_a_cnn_equal_torch_funcs():
    torch = pytest.importorskip("torch")
    tnn, tF = torch.nn, torch.nn.functional

    class TorchCNN(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = tnn.Conv2d(1, 4, 3), tnn.Conv2d(4, 6, 3, padding=1)
            self.fc1, self.fc2 = tnn.Linear(6 * 4 * 4, 16), tnn.Linear(16, 10)

        def forward(self, x):
            x = tF.relu(self.conv1(x))
            x = tF.max_pool2d(tF.relu(self.conv2(x)), 2)
            x = tF.relu(self.fc1(torch.flatten(x, 1)))
            return tF.log_softmax(self.fc2(x), dim=1)

    _, data, targets = MODELS["cnn"]
    tg.manual_seed(0)
    ours = SmallCNN().double()
    theirs = TorchCNN().double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    params = {k: v.detach() for k, v in ours.named_parameters()}
    grads = func.vmap(func.grad(_loss_of(ours)), in_dims=(None, None, 0, 0))(
        params, {}, tg.tensor(data), tg.tensor(targets)
    )

    def their_loss(p, b, sample, target):
        predictions = torch.func.functional_call(theirs, (p, b), (sample.unsqueeze(0),))
        return tF.nll_loss(predictions, target.unsqueeze(0))

    their_params = {k: v.detach() for k, v in theirs.named_parameters()}
    expected = torch.func.vmap(torch.func.grad(their_loss), in_dims=(None, None, 0, 0))(
        their_params, {}, torch.tensor(data), torch.tensor(targets)
    )
    for key, value in expected.items():
        np.testing.assert_allclose(grads[key].numpy(), value.numpy(), rtol=1e-10, atol=1e-12)


def test_a_sequential_cnn_fuses_and_still_batches_per_sample_weights():
    """``Sequential`` runs conv + ReLU + max-pool as one fused op; with per-sample weights
    vmap runs it as the ops it fuses."""
    tg.manual_seed(2)
    model = nn.Sequential(
        nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(0), nn.Linear(27, 2)
    ).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = tg.randn(BATCH, 1, 8, 8, dtype=tg.float64)

    def loss(p, x):
        return func.functional_call(model, p, (x,)).square().sum()

    before = sum(batching.state.looped.values())
    grads = func.vmap(func.grad(loss), in_dims=(None, 0))(params, xs)
    assert sum(batching.state.looped.values()) == before
    for b in range(BATCH):
        model.zero_grad()
        model(xs[b]).square().sum().backward()
        np.testing.assert_allclose(
            grads["0.weight"][b].numpy(), model[0].weight.grad.numpy(), rtol=1e-10, atol=1e-12
        )
