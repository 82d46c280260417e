"""optim.LBFGS: PyTorch's algorithm (fixed step and strong-Wolfe line search), its stopping
rules and state dict, against PyTorch's trajectories where it is installed and against
known minima without it."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn import functional as F

SETTINGS = [
    {},
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "history_size": 3, "max_iter": 7},
    {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 5, "max_eval": 9},
    {"tolerance_grad": 1e-3, "tolerance_change": 1e-4},
]
START = np.array([-1.2, 1.0, 0.5, -0.3, 2.0])


def problem(module, seed=0):
    """A scaled Rosenbrock valley in (w0, w1) plus a logistic regression on all of w."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((30, 5))
    y = (x @ rng.standard_normal(5) > 0).astype(np.float64)
    w = module.tensor(START.copy(), requires_grad=True)
    xs, ys = module.tensor(x), module.tensor(y)
    functional = F if module is tg else module.nn.functional

    def loss_of():
        valley = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2
        return 0.01 * valley + functional.binary_cross_entropy_with_logits(xs @ w, ys)

    return w, loss_of


def trajectory(module, settings, steps=4, opt_and_w=None):
    w, loss_of = problem(module)
    opt = module.optim.LBFGS([w], **settings)

    def closure():
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    path = []
    for _ in range(steps):
        loss = opt.step(closure)
        path.append((float(loss.detach()), w.detach().numpy().copy()))
    return path, opt, w, closure


@pytest.mark.parametrize("settings", SETTINGS)
def test_trajectories_match_torch(settings):
    torch = pytest.importorskip("torch")
    ours, opt, _, _ = trajectory(tg, settings)
    theirs, their_opt, _, _ = trajectory(torch, settings)
    for (loss, w), (their_loss, their_w) in zip(ours, theirs, strict=True):
        assert loss == pytest.approx(their_loss, rel=1e-9)
        np.testing.assert_allclose(w, their_w, rtol=1e-8, atol=1e-10)
    state, their_state = opt.state_dict(), their_opt.state_dict()
    assert state["param_groups"][0].keys() == their_state["param_groups"][0].keys()
    assert sorted(state["state"][0]) == sorted(their_state["state"][0])
    for key in ("func_evals", "n_iter"):
        assert state["state"][0][key] == their_state["state"][0][key]


def test_loading_torchs_state_continues_torchs_trajectory():
    torch = pytest.importorskip("torch")
    settings = {"line_search_fn": "strong_wolfe", "history_size": 4, "max_iter": 3}
    _, their_opt, their_w, their_closure = trajectory(torch, settings, steps=2)
    w, loss_of = problem(tg)
    with tg.no_grad():
        w.copy_(their_w.detach().numpy())
    opt = tg.optim.LBFGS([w], **settings)
    opt.load_state_dict(their_opt.state_dict())

    def closure():
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
        their_opt.step(their_closure)
        np.testing.assert_allclose(w.numpy(), their_w.detach().numpy(), rtol=1e-8, atol=1e-10)


def test_rosenbrock_reaches_its_minimum_with_the_line_search():
    w = tg.tensor([-1.5, 2.0], dtype=tg.float64, requires_grad=True)
    opt = tg.optim.LBFGS([w], line_search_fn="strong_wolfe", max_iter=200)

    def closure():
        opt.zero_grad()
        loss = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    # stopped by tolerance_change (the loss changes by less than 1e-9), as PyTorch stops
    np.testing.assert_allclose(w.numpy(), [1.0, 1.0], atol=1e-5)


def test_a_quadratic_is_solved_in_as_many_iterations_as_dimensions():
    """With exact line searches L-BFGS is conjugate gradients on a quadratic."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 4))
    hessian = a @ a.T + 4 * np.eye(4)
    b = rng.standard_normal(4)
    x = tg.zeros(4, dtype=tg.float64, requires_grad=True)
    opt = tg.optim.LBFGS(
        [x], line_search_fn="strong_wolfe", max_iter=30, tolerance_grad=1e-12,
        tolerance_change=1e-16,
    )  # fmt: skip
    h, bb = tg.tensor(hessian), tg.tensor(b)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (h @ x)) - bb @ x
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(hessian, b), rtol=1e-7, atol=1e-9)


def test_state_dict_round_trip_resumes_exactly():
    settings = {"history_size": 3, "max_iter": 4}
    unbroken, _, _, _ = trajectory(tg, settings, steps=4)
    _, opt, w, _ = trajectory(tg, settings, steps=2)
    saved, weights = opt.state_dict(), w.detach().numpy().copy()
    w2, loss_of = problem(tg)
    with tg.no_grad():
        w2.copy_(weights)
    fresh = tg.optim.LBFGS([w2], **settings)
    fresh.load_state_dict(saved)

    def closure():
        fresh.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    for expected_loss, expected_w in unbroken[2:]:
        assert float(fresh.step(closure)) == pytest.approx(expected_loss, rel=1e-12)
        np.testing.assert_allclose(w2.numpy(), expected_w, rtol=1e-12)
    bad = {**saved, "state": {0: {**saved["state"][0], "d": np.zeros(3)}}}
    with pytest.raises(ValueError, match="expected a flat vector of 5 numbers"):
        fresh.load_state_dict(bad)


def test_lbfgs_refuses_what_pytorch_refuses():
    w = tg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        tg.optim.LBFGS([{"params": [w]}, {"params": [tg.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        tg.optim.LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="Invalid learning rate"):
        tg.optim.LBFGS([w], lr=-1.0)
    opt = tg.optim.LBFGS([w])
    assert opt.param_groups[0]["max_eval"] == 25  # max_iter · 5 // 4, PyTorch's default
    with pytest.raises(TypeError):
        opt.step()
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        opt.add_param_group({"params": [tg.zeros(1, requires_grad=True)]})


def test_float32_parameters_keep_their_dtype():
    w = tg.tensor([0.5, -0.5], requires_grad=True)
    opt = tg.optim.LBFGS([w], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((w - tg.tensor([1.0, 2.0])) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    assert w.dtype == tg.float32
    np.testing.assert_allclose(w.numpy(), [1.0, 2.0], atol=1e-5)
