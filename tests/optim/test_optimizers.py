"""Optimizers: hand-computed first steps, PyTorch agreement, in-place float32 updates,
hyper-parameter validation, parameter groups and state dicts."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn, optim


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


def test_adadelta_by_hand():
    # gradients 1, 3 on θ₀ = 1, lr 1, ρ 0.9, eps 1e-6:
    # t=1: v = 0.1, Δ = √(1e-6)/√(0.100001)·1, u = 0.1·Δ²
    # t=2: v = 0.09 + 0.9 = 0.99, Δ = √(u + 1e-6)/√(0.990001)·3
    history = run(lambda p: optim.Adadelta(p), sequence(1.0, 3.0), 2, [1.0])
    delta1 = math.sqrt(1e-6) / math.sqrt(0.100001)
    u = 0.1 * delta1**2
    delta2 = math.sqrt(u + 1e-6) / math.sqrt(0.990001) * 3.0
    np.testing.assert_allclose(np.ravel(history), [1 - delta1, 1 - delta1 - delta2], rtol=1e-13)


def test_adagrad_by_hand():
    # gradients 1, 3, −2, lr 0.1, lr_decay 0.5, initial sum 0.25, eps 1e-10:
    # s = 1.25, 10.25, 14.25; θ ← θ − 0.1/(1 + (t − 1)·0.5) · g/(√s + 1e-10)
    history = run(
        lambda p: optim.Adagrad(p, lr=0.1, lr_decay=0.5, initial_accumulator_value=0.25),
        sequence(1.0, 3.0, -2.0),
        3,
        [1.0],
    )
    expected, theta = [], 1.0
    for t, (g, s) in enumerate(zip([1.0, 3.0, -2.0], [1.25, 10.25, 14.25], strict=True)):
        theta -= 0.1 / (1 + t * 0.5) * g / (math.sqrt(s) + 1e-10)
        expected.append(theta)
    np.testing.assert_allclose(np.ravel(history), expected, rtol=1e-14)
    np.testing.assert_allclose(expected[0], 0.9105572809, rtol=1e-10)  # 1 − 0.1/√1.25


def test_adagrad_makes_its_state_with_the_optimizer_as_pytorch_does():
    a, b = param([1.0, 2.0]), param([3.0])
    opt = optim.Adagrad([a], initial_accumulator_value=0.5)
    assert opt.state[a]["step"] == 0
    np.testing.assert_array_equal(opt.state[a]["sum"], [0.5, 0.5])
    opt.add_param_group({"params": [b], "initial_accumulator_value": 2.0})
    np.testing.assert_array_equal(opt.state[b]["sum"], [2.0])
    assert list(opt.state_dict()["state"]) == [0, 1]


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
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
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
    lambda ps: optim.Adadelta(ps, weight_decay=0.1),
    lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
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
        (lambda ps: optim.SGD(ps, lr=-0.1), "Invalid learning rate: -0.1"),
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=-1), "Invalid momentum value: -1"),
        (lambda ps: optim.SGD(ps, lr=0.1, nesterov=True), "Nesterov momentum requires"),
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
        (lambda ps: optim.SGD(ps, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
        (lambda ps: optim.Adam(ps, betas=(0.9,)), r"betas must be a pair \(beta1, beta2\)"),
        (lambda ps: optim.Adam(ps, eps=-1e-8), "Invalid epsilon value"),
        (lambda ps: optim.AdamW(ps, lr=float("nan")), "Invalid learning rate: nan"),
        (lambda ps: optim.RMSprop(ps, alpha=-0.5), "Invalid alpha value"),
        (lambda ps: optim.RMSprop(ps, momentum=-0.5), "Invalid momentum value"),
        (lambda ps: optim.Adadelta(ps, rho=1.5), r"Invalid rho value: 1\.5"),
        (lambda ps: optim.Adadelta(ps, eps=-1.0), "Invalid epsilon value"),
        (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
        (
            lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1),
            "Invalid initial_accumulator_value value: -1",
        ),
        (lambda ps: optim.SGD([], lr=0.1), "empty parameter list"),
        (lambda ps: optim.SGD([ps[0], ps[0]], lr=0.1), "appears twice"),
        (lambda ps: optim.SGD([ps[0] * 2], lr=0.1), "non-leaf"),
        (
            lambda ps: optim.SGD([("w", ps[0]), param([2.0])], lr=0.1),
            "Some param names are missing",
        ),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make([param([1.0])])


TYPE_ERRORS = [
    ("SGD", dict(lr="0.1"), r"SGD: lr must be a real number, got str '0\.1'"),
    ("SGD", dict(lr=None), "SGD: lr must be a real number, got NoneType None"),
    ("SGD", dict(lr=0.1, momentum=None), "SGD: momentum must be a real number"),
    ("Adam", dict(betas=0.9), r"Adam: betas must be a pair \(beta1, beta2\), got 0\.9"),
    ("Adam", dict(betas=(0.9, "a")), "Adam: betas.1. must be a real number, got str 'a'"),
    ("Adam", dict(eps="x"), "Adam: eps must be a real number"),
    ("AdamW", dict(weight_decay=[0.1]), "AdamW: weight_decay must be a real number, got list"),
    ("RMSprop", dict(alpha="x"), "RMSprop: alpha must be a real number"),
    ("Adadelta", dict(rho="0.9"), "Adadelta: rho must be a real number"),
    ("Adagrad", dict(lr_decay="0"), "Adagrad: lr_decay must be a real number"),
]


@pytest.mark.parametrize("name, kwargs, message", TYPE_ERRORS, ids=lambda v: str(v))
def test_hyper_parameters_of_the_wrong_type_are_refused_up_front(name, kwargs, message):
    """A string lr or a single beta fails in the constructor with a message that names it,
    not in the first step with NumPy's words; PyTorch raises TypeError for these too."""
    with pytest.raises(TypeError, match=message):
        getattr(optim, name)([param([1.0])], **kwargs)


@pytest.mark.parametrize("name, kwargs, message", TYPE_ERRORS, ids=lambda v: str(v))
def test_pytorch_raises_the_same_error_type_for_the_wrong_type(name, kwargs, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)


def test_pytorch_s_implementation_switches_are_accepted_and_kept():
    """foreach / fused / capturable pick one of PyTorch's implementations of the same update;
    tensorgrad has one, so they change nothing but are kept (PyTorch's state-dict keys)."""
    a, b = param([1.0, 2.0]), param([1.0, 2.0])
    plain = optim.Adam([a], lr=0.1)
    switched = optim.Adam([b], lr=0.1, foreach=False, fused=True, capturable=True)
    assert switched.param_groups[0]["fused"] is True
    for opt, p in ((plain, a), (switched, b)):
        p.grad = np.array([0.5, -1.0])
        opt.step()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        optim.SGD([param([1.0])], lr=0.1, fused=True, foreach=True)
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        optim.SGD([param([1.0])], lr=0.1, differentiable=True)


def test_a_refused_group_changes_nothing():
    a, b = param([1.0]), param([2.0])
    opt = optim.SGD([a], lr=0.1)
    group = {"params": [b], "lr": "fast"}
    with pytest.raises(TypeError, match="lr must be a real number"):
        opt.add_param_group(group)
    assert group == {"params": [b], "lr": "fast"} and len(opt.param_groups) == 1
    opt.add_param_group({"params": [b]})  # b was not half-added
    assert opt.param_groups[1]["params"] == [b]


def test_invalid_parameter_collections():
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(param([1.0]), lr=0.1)
    with pytest.raises(TypeError, match="only optimize Tensors"):
        optim.SGD([np.zeros(2)], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {param([1.0])}}], lr=0.1)
    with pytest.raises(ValueError, match="needs a 'params' entry"):
        optim.SGD([{"lr": 0.1}], lr=0.1)


def test_named_parameters_are_taken_and_kept_as_pytorch_does():
    model = nn.Linear(2, 1)
    opt = optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"] == list(model.parameters())
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": [param([1.0])]})


def test_zero_grad_in_place_keeps_the_gradient_and_detaches_one_with_a_graph():
    p = param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad  # the same tensor, zeroed in place (PyTorch: the same)
    np.testing.assert_array_equal(grad.numpy(), 0.0)
    # a gradient from backward(create_graph=True) is part of a graph: zeroed, and cut off it
    p.grad = None
    (p * p * p).sum().backward(create_graph=True)
    assert p.grad.requires_grad
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), 0.0)
    assert not p.grad.requires_grad and p.grad.grad_fn is None
    opt.zero_grad()
    assert p.grad is None


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
