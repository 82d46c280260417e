"""Optimizers: hand-computed first steps, PyTorch agreement, in-place float32 updates,
hyper-parameter validation, parameter groups and state dicts."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn, optim
from tensorgrad.optim import _axpy


def param(values, dtype=np.float64) -> nn.Parameter:
    return nn.Parameter(np.array(values, dtype=dtype))


def run(opt_factory, grads_of, steps, start=(1.0, -2.0)):
    """Take ``steps`` steps on one parameter with gradient ``grads_of(t, θ)``; θ after each."""
    p = param(start)
    opt = opt_factory([p])
    history = []
    for t in range(steps):
        p.grad = np.asarray(grads_of(t, p.numpy().copy()), dtype=np.float64)
        opt.step()
        history.append(p.numpy().copy())
    return history


def quadratic(t, theta):
    return theta  # the gradient of ½‖θ‖²


def sequence(*grads):
    return lambda t, theta: np.full_like(theta, grads[t])


# --------------------------------------------------------------------- hand-computed steps
def test_sgd_momentum_by_hand():
    # g = θ; b₁ = g₁; bₜ = 0.9 bₜ₋₁ + gₜ; θ ← θ − 0.1 b
    # θ: 1 → 1 − 0.1·1 = 0.9 → 0.9 − 0.1·(0.9 + 0.9) = 0.72 → 0.72 − 0.1·(1.62 + 0.72) = 0.486
    history = run(lambda p: optim.SGD(p, lr=0.1, momentum=0.9), quadratic, 3)
    np.testing.assert_allclose(history, [[0.9, -1.8], [0.72, -1.44], [0.486, -0.972]], rtol=1e-14)


def test_sgd_plain_and_maximize_by_hand():
    history = run(lambda p: optim.SGD(p, lr=0.1), quadratic, 2)
    np.testing.assert_allclose(history, [[0.9, -1.8], [0.81, -1.62]], rtol=1e-14)
    history = run(lambda p: optim.SGD(p, lr=0.1, maximize=True), quadratic, 3)  # θ ← 1.1 θ
    np.testing.assert_allclose(np.array(history)[:, 0], [1.1, 1.21, 1.331], rtol=1e-14)


def test_sgd_nesterov_by_hand():
    # b₁ = 1, step 1.9 → θ = 0.81; b₂ = 0.9 + 0.81 = 1.71, step 0.81 + 0.9·1.71 = 2.349
    # → θ = 0.5751; b₃ = 1.539 + 0.5751 = 2.1141, step 0.5751 + 1.90269 → θ = 0.327321
    history = run(lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True), quadratic, 3)
    np.testing.assert_allclose(np.array(history)[:, 0], [0.81, 0.5751, 0.327321], rtol=1e-13)


def test_sgd_weight_decay_and_dampening_by_hand():
    # g' = θ + 0.5 θ = 1.5 θ; b₁ = g'₁ = 1.5 (no dampening on the first step) → θ = 0.85
    # g' = 1.275, b = 0.9·1.5 + 0.5·1.275 = 1.9875 → θ = 0.65125
    # g' = 0.976875, b = 1.78875 + 0.4884375 = 2.2771875 → θ = 0.42353125
    history = run(
        lambda p: optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.5),
        quadratic,
        3,
    )
    np.testing.assert_allclose(np.array(history)[:, 0], [0.85, 0.65125, 0.42353125], rtol=1e-13)


def test_adam_by_hand():
    # gradients 1, 3, −2 on θ₀ = 1, lr 0.1, β (0.9, 0.999), eps 1e-8:
    # t=1: m = 0.1,   v = 0.001,       m̂ = 1,              v̂ = 1             → θ = 0.900000001
    # t=2: m = 0.39,  v = 0.009999,    m̂ = 0.39/0.19,      v̂ = 0.009999/0.001999
    # t=3: m = 0.151, v = 0.013989001, m̂ = 0.151/0.271,    v̂ = 0.013989001/0.002997001
    history = run(lambda p: optim.Adam(p, lr=0.1), sequence(1.0, 3.0, -2.0), 3, start=[1.0])
    m_hat, v_hat = (
        [1.0, 0.39 / 0.19, 0.151 / 0.271],
        [1.0, 0.009999 / 0.001999, 0.013989001 / 0.002997001],
    )
    expected, theta = [], 1.0
    for m, v in zip(m_hat, v_hat, strict=True):
        theta -= 0.1 * m / (np.sqrt(v) + 1e-8)
        expected.append(theta)
    np.testing.assert_allclose(np.ravel(history), expected, rtol=1e-12)
    np.testing.assert_allclose(
        expected, [0.900000001, 0.8082218895123323, 0.7824315091221741], rtol=1e-12
    )


def test_adam_constant_gradient_moves_lr_per_step():
    # with bias correction m̂ = g and v̂ = g² exactly, so each step is lr·g/(|g| + eps)
    history = run(lambda p: optim.Adam(p, lr=0.01), lambda t, th: np.full_like(th, 0.5), 4, [0.0])
    np.testing.assert_allclose(
        np.ravel(history), -0.01 * np.arange(1, 5) * 0.5 / (0.5 + 1e-8), rtol=1e-12
    )


def test_adam_amsgrad_by_hand():
    # gradients 1, 0, 0: v = 0.001, 0.000999, 0.000998001 falls, so amsgrad keeps v_max = 0.001
    # t=2: m̂ = 0.09/0.19, v̂ = 0.001/0.001999 (plain Adam: 0.000999/0.001999)
    ams = run(lambda p: optim.Adam(p, lr=0.1, amsgrad=True), sequence(1.0, 0.0, 0.0), 3, [1.0])
    plain = run(lambda p: optim.Adam(p, lr=0.1), sequence(1.0, 0.0, 0.0), 3, [1.0])
    np.testing.assert_allclose(
        np.ravel(ams), [0.900000001, 0.8330276878258663, 0.7812837871703692], rtol=1e-12
    )
    np.testing.assert_allclose(
        np.ravel(plain), [0.900000001, 0.8329941765341887, 0.7811984801832372], rtol=1e-12
    )


def test_adam_weight_decay_and_adamw_by_hand():
    # Adam: g' = g + 0.5 θ: t=1 g' = 1.5, m̂ = 1.5, v̂ = 2.25 → θ = 1 − 0.1·1.5/(1.5 + 1e-8)
    adam = run(
        lambda p: optim.Adam(p, lr=0.1, weight_decay=0.5), sequence(1.0, 3.0, -2.0), 3, [1.0]
    )
    np.testing.assert_allclose(
        np.ravel(adam), [0.9000000006666666, 0.8050462824875406, 0.7624724086958309], rtol=1e-12
    )
    # AdamW: θ ← θ (1 − 0.1·0.5) first, then the plain Adam step: 0.95 − 0.099999999 = 0.850000001
    adamw = run(
        lambda p: optim.AdamW(p, lr=0.1, weight_decay=0.5), sequence(1.0, 3.0, -2.0), 3, [1.0]
    )
    np.testing.assert_allclose(
        np.ravel(adamw), [0.850000001, 0.7157218894623323, 0.6541454145990574], rtol=1e-12
    )
    assert optim.AdamW([param([1.0])]).defaults["weight_decay"] == 1e-2


def test_rmsprop_by_hand():
    # gradients 1, 3, −2, lr 0.01, α 0.99: v = 0.01, 0.0999, 0.138901; θ ← θ − 0.01 g/(√v + 1e-8)
    # t=1: θ = 1 − 0.01/(0.1 + 1e-8) = 0.90000001
    history = run(lambda p: optim.RMSprop(p, lr=0.01), sequence(1.0, 3.0, -2.0), 3, [1.0])
    np.testing.assert_allclose(
        np.ravel(history), [0.9000000099999991, 0.8050842134277522, 0.8587475037793543], rtol=1e-12
    )


def test_rmsprop_centered_momentum_by_hand():
    # ḡ = 0.01, 0.0399, 0.019501; √(v − ḡ²) + eps = 0.0994987537, 0.3135410599, 0.3721837160
    # b = g/avg + 0.5 b: 10.0503771425, 14.5933133985, 1.9229664648; θ ← θ − 0.01 b
    history = run(
        lambda p: optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
        sequence(1.0, 3.0, -2.0),
        3,
        [1.0],
    )
    np.testing.assert_allclose(
        np.ravel(history), [0.8994962285750879, 0.7535630945905364, 0.7343334299428298], rtol=1e-12
    )


# --------------------------------------------------------------------- agreement with PyTorch
TORCH_CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, eps=1e-4)),
]


@pytest.mark.parametrize("name, kwargs", TORCH_CASES, ids=lambda v: str(v))
def test_matches_pytorch_for_five_steps(name, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    initial = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    noise = [[rng.standard_normal(a.shape) for a in initial] for _ in range(5)]
    ours = [param(a) for a in initial]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in initial]
    opt = getattr(optim, name)(ours, **kwargs)
    torch_opt = getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(5):
        for p, t, n in zip(ours, theirs, noise[step], strict=True):
            p.grad = 0.5 * p.numpy() + n  # the gradient depends on the parameters, as in training
            t.grad = torch.from_numpy(0.5 * t.detach().numpy() + n)
        opt.step()
        torch_opt.step()
    for p, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------- how step() updates
OPTIMIZERS = [
    lambda ps: optim.SGD(ps, lr=0.1),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
    lambda ps: optim.Adam(ps, lr=0.1),
    lambda ps: optim.AdamW(ps, lr=0.1, amsgrad=True),
    lambda ps: optim.RMSprop(ps, lr=0.1, momentum=0.5, centered=True),
]


@pytest.mark.parametrize("make", OPTIMIZERS)
def test_step_updates_float32_arrays_in_place_without_a_graph(make):
    p = param(np.ones((3, 2)), dtype=np.float32)
    p.grad = np.full((3, 2), 0.5, dtype=np.float32)
    array, version = p.numpy(), p._version
    opt = make([p])
    opt.step()
    assert p.numpy() is array and p.dtype == np.float32  # same array, still float32
    assert not np.array_equal(array, np.ones((3, 2)))
    assert p._version > version and p.is_leaf and p.grad_fn is None
    for value in opt.state.get(p, {}).values():
        if isinstance(value, np.ndarray):
            assert value.dtype == np.float32


def test_step_skips_parameters_without_gradients_and_refreshes_versions():
    a, b = param([1.0]), param([2.0])
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = np.array([1.0])
    opt.step()
    assert b.numpy()[0] == 2.0 and b not in opt.state and b._version == 0
    # a graph that saved ``a`` before the step notices the change
    a.grad = None
    y = (a * a).sum()
    a.grad = np.array([1.0])
    opt.step()
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_step_with_closure_returns_the_loss():
    p = param([3.0])
    opt = optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with tg.no_grad():  # the closure still records its graph
        loss = opt.step(closure)
    assert loss.item() == 9.0 and p.numpy()[0] == pytest.approx(3.0 - 0.1 * 6.0)


def test_zero_grad():
    p = param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    p.grad = np.array([1.0, 1.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), 0.0)
    opt.zero_grad()
    assert p.grad is None


def test_trains_a_model_end_to_end():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    x = tg.randn((64, 2))
    y = (x.numpy()[:, :1] * x.numpy()[:, 1:]).astype(np.float32)
    opt = optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(150):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


# --------------------------------------------------------------------- groups and validation
def test_param_groups_with_their_own_hyper_parameters():
    a, b = param([1.0]), param([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9
    a.grad, b.grad = np.array([1.0]), np.array([1.0])
    opt.step()
    assert a.numpy()[0] == pytest.approx(0.9) and b.numpy()[0] == pytest.approx(0.5)
    c = param([0.0])
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda ps: optim.SGD(ps, lr=-0.1), "Invalid learning rate"),
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=-1), "Invalid momentum"),
        (lambda ps: optim.SGD(ps, lr=0.1, nesterov=True), "Nesterov momentum requires"),
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
        (lambda ps: optim.SGD(ps, lr=0.1, weight_decay=-1), "Invalid weight_decay"),
        (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), "beta parameter at index 0"),
        (lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), "beta parameter at index 1"),
        (lambda ps: optim.Adam(ps, eps=-1e-8), "Invalid epsilon"),
        (lambda ps: optim.AdamW(ps, lr=float("nan")), "Invalid learning rate"),
        (lambda ps: optim.RMSprop(ps, alpha=-0.5), "Invalid alpha"),
        (lambda ps: optim.RMSprop(ps, momentum=-0.5), "Invalid momentum"),
        (lambda ps: optim.SGD([], lr=0.1), "empty parameter list"),
        (lambda ps: optim.SGD([ps[0], ps[0]], lr=0.1), "appears twice"),
        (lambda ps: optim.SGD([ps[0] * 2], lr=0.1), "non-leaf"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make([param([1.0])])


def test_invalid_parameter_collections():
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(param([1.0]), lr=0.1)
    with pytest.raises(TypeError, match="only optimize Tensors"):
        optim.SGD([np.zeros(2)], lr=0.1)
    with pytest.raises(TypeError, match="not a set"):
        optim.SGD([{"params": {param([1.0])}}], lr=0.1)


# --------------------------------------------------------------------- state dicts
@pytest.mark.parametrize("make", OPTIMIZERS)
def test_state_dict_round_trip_resumes_bit_for_bit(make):
    rng = np.random.default_rng(1)
    start = rng.standard_normal((2, 3)).astype(np.float32)
    grads = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(6)]

    def train(p, opt, steps):
        for g in steps:
            p.grad = g
            opt.step()

    straight = param(start.copy(), np.float32)
    train(straight, make([straight]), grads)

    first = param(start.copy(), np.float32)
    opt = make([first])
    train(first, opt, grads[:3])
    saved_optimizer, saved_weights = opt.state_dict(), first.numpy().copy()
    train(first, opt, grads[3:4])  # training on must not change what was saved

    resumed = param(saved_weights, np.float32)
    second = make([resumed])
    second.load_state_dict(saved_optimizer)
    train(resumed, second, grads[3:])
    np.testing.assert_array_equal(resumed.numpy(), straight.numpy())


@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numpy-only"])
def test_sgd_momentum_over_one_flat_buffer_matches_the_per_parameter_step_bit_for_bit(
    blas, monkeypatch
):
    """SGD keeps plain momentum buffers as views into one array (fewer NumPy calls); the
    results, the state and the fall-back after load_state_dict or a missing gradient are
    those of the per-parameter step, with the updates in BLAS or in NumPy alone."""
    if not blas:
        monkeypatch.setattr(_axpy, "_functions", {})
    rng = np.random.default_rng(3)
    shapes = [(4, 3), (4,), (2, 4), (2,), ()]
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]

    def train(opt, params, steps, skip=None):
        for t, step in enumerate(steps):
            for i, (p, g) in enumerate(zip(params, step)):
                p.grad = None if (t, i) == skip else g
            opt.step()

    flat = [param(x.copy(), np.float32) for x in start]
    flat_opt = optim.SGD(flat, lr=0.1, momentum=0.9)
    reference = [param(x.copy(), np.float32) for x in start]
    reference_opt = optim.SGD(reference, lr=0.1, momentum=0.9)
    reference_opt._flat_step = lambda *args: False  # the per-parameter step only
    train(flat_opt, flat, grads[:3])
    train(reference_opt, reference, grads[:3])
    buffers = [flat_opt.state[p]["momentum_buffer"] for p in flat]
    assert all(b.base is buffers[0].base for b in buffers)  # one array underneath
    for a, b in zip(
        flat + buffers, reference + [reference_opt.state[p]["momentum_buffer"] for p in reference]
    ):
        np.testing.assert_array_equal(getattr(a, "data", a), getattr(b, "data", b))
    train(flat_opt, flat, grads[3:], skip=(0, 1))  # a missing gradient: per-parameter step
    train(reference_opt, reference, grads[3:], skip=(0, 1))
    for a, b in zip(flat, reference):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    loaded = optim.SGD(flat, lr=0.1, momentum=0.9)
    loaded.load_state_dict(flat_opt.state_dict())
    train(loaded, flat, grads[:2])  # loaded buffers are separate arrays: per-parameter step
    train(reference_opt, reference, grads[:2])
    for a, b in zip(flat, reference):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _clear(opt, params):
    opt.state.clear()  # momentum starts again from the next gradient


def _replace_buffer(opt, params):
    opt.state[params[1]]["momentum_buffer"] = np.full(params[1].shape, 0.5)


def _replace_entry(opt, params):
    opt.state[params[0]] = {"momentum_buffer": np.zeros(params[0].shape)}


def _drop_entry(opt, params):
    del opt.state[params[1]]


def _replace_parameter_array(opt, params):
    params[0].data = params[0].numpy().copy()  # the update must go to the new array


@pytest.mark.parametrize(
    "change", [_clear, _replace_buffer, _replace_entry, _drop_entry, _replace_parameter_array]
)
def test_sgd_flat_momentum_follows_changes_to_state_like_the_per_parameter_step(change):
    rng = np.random.default_rng(4)
    start = [rng.standard_normal(s) for s in ((3, 2), (3,))]
    flat, reference = ([param(x.copy()) for x in start] for _ in range(2))
    flat_opt = optim.SGD(flat, lr=0.1, momentum=0.9)
    reference_opt = optim.SGD(reference, lr=0.1, momentum=0.9)
    reference_opt._flat_step = lambda *args: False
    for step in range(4):
        if step == 2:
            change(flat_opt, flat)
            change(reference_opt, reference)
        for params, opt in ((flat, flat_opt), (reference, reference_opt)):
            for p, x in zip(params, start):
                p.grad = np.sin(p.numpy() + x)
            opt.step()
    for a, b in zip(flat, reference):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("duplicate", [copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_copied_optimizer_trains_on_like_the_original(duplicate, momentum):
    """A copy (deepcopy, pickle) after some steps continues as the original would, on its own
    copies of the parameters; the original's prepared updates are not carried over."""
    rng = np.random.default_rng(5)
    start = [rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (3,))]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (3,))] for _ in range(4)]

    def train(opt, steps):
        for step in steps:
            for p, g in zip(opt.param_groups[0]["params"], step):
                p.grad = g
            opt.step()

    straight = optim.SGD([param(x.copy(), np.float32) for x in start], lr=0.1, momentum=momentum)
    train(straight, grads)
    params = [param(x.copy(), np.float32) for x in start]
    original = optim.SGD(params, lr=0.1, momentum=momentum)
    train(original, grads[:2])
    copied = duplicate(original)
    train(copied, grads[2:])
    for a, b in zip(copied.param_groups[0]["params"], straight.param_groups[0]["params"]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    two_steps = optim.SGD([param(x.copy(), np.float32) for x in start], lr=0.1, momentum=momentum)
    train(two_steps, grads[:2])
    for a, b in zip(params, two_steps.param_groups[0]["params"]):  # the original's: untouched
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: optim.SGD([{"params": ps[:1]}, {"params": ps[1:]}], lr=0.1, momentum=0.9),
        lambda ps: optim.Adam(ps, lr=0.1),
        lambda ps: optim.RMSprop(ps, lr=0.1, momentum=0.5),
    ],
    ids=["sgd", "sgd-two-groups", "adam", "rmsprop"],
)
def test_a_read_only_parameter_is_refused_before_anything_changes(make):
    params = [param(np.ones((3, 2)), np.float32), param(np.ones(2), np.float32)]
    opt = make(params)
    for _ in range(2):
        for p in params:
            p.grad = np.full(p.shape, 0.5, np.float32)
        opt.step()
    params[1].numpy().flags.writeable = False
    weights = [p.numpy().copy() for p in params]
    state = {p: copy.deepcopy(values) for p, values in opt.state.items()}
    with pytest.raises(
        ValueError, match=r"step: parameter \d of group \d \(shape \(2,\)\) holds a read-only"
    ):
        opt.step()
    for p, w in zip(params, weights):
        np.testing.assert_array_equal(p.numpy(), w)
    for p in params:
        for name, value in state[p].items():
            np.testing.assert_array_equal(opt.state[p][name], value)
    params[1].grad = None  # without a gradient it is skipped, read-only or not
    opt.step()
    assert not np.array_equal(params[0].numpy(), weights[0])


def test_state_dict_layout_follows_pytorch():
    a, b = param([1.0, 2.0]), param([3.0])
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    b.grad = np.array([1.0])
    opt.step()
    state = opt.state_dict()
    assert [g["params"] for g in state["param_groups"]] == [[0], [1]]
    assert state["param_groups"][1]["lr"] == 0.5 and state["param_groups"][0]["betas"] == (
        0.9,
        0.999,
    )
    assert list(state["state"]) == [1]
    assert state["state"][1]["step"] == 1 and set(state["state"][1]) == {
        "step",
        "exp_avg",
        "exp_avg_sq",
    }


def test_load_state_dict_checks_the_groups_and_shapes():
    opt = optim.SGD([param([1.0, 2.0])], lr=0.1, momentum=0.9)
    opt.param_groups[0]["params"][0].grad = np.array([1.0, 1.0])
    opt.step()
    state = opt.state_dict()
    with pytest.raises(ValueError, match="1 parameter groups, this optimizer 2"):
        optim.SGD([{"params": [param([1.0])]}, {"params": [param([1.0])]}], lr=0.1).load_state_dict(
            state
        )
    with pytest.raises(ValueError, match="has 2 parameters, the saved group 1"):
        optim.SGD([param([1.0]), param([1.0])], lr=0.1).load_state_dict(state)
    other = optim.SGD([param([1.0, 2.0, 3.0])], lr=0.3)
    with pytest.raises(ValueError, match=r"has shape \(2,\), the parameter \(3,\)"):
        other.load_state_dict(state)
    assert other.param_groups[0]["lr"] == 0.3 and other.state == {}  # unchanged after failing


def test_load_state_dict_restores_hyper_parameters_and_casts_state():
    p = param([1.0, 2.0], dtype=np.float32)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    state = {
        "state": {0: {"momentum_buffer": np.array([0.5, 0.5])}},  # float64 in the checkpoint
        "param_groups": [{**opt.state_dict()["param_groups"][0], "lr": 0.01}],
    }
    opt.load_state_dict(state)
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["params"] == [p]
    assert opt.state[p]["momentum_buffer"].dtype == np.float32
    state["state"][0]["momentum_buffer"][0] = 9.0  # the optimizer holds its own copy
    assert opt.state[p]["momentum_buffer"][0] == 0.5
