"""The losses PyTorch programs use, against PyTorch: values and gradients in float64 (every
input that PyTorch differentiates), the edge cases (ignored targets, class weights, clamped
logs, kinks, zero targets), the error types, and the module forms.

The op registry (tests/ops/registry/pytorch_ports.py) checks the same functions against NumPy
references, finite differences and the scalar engine; here PyTorch is the reference.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F

RNG = np.random.default_rng(15)
REDUCTIONS = ["mean", "sum", "none"]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def compare(torch, ours, theirs, arrays, *, grad=None, rtol=1e-10, atol=1e-12):
    """Run ``ours`` on Tensors and ``theirs`` on torch tensors made from the same float64
    ``arrays``; compare the outputs and, for the arrays marked in ``grad`` (default: every
    floating array), the gradients of sum(out · w) for fixed random weights w."""
    grad = [a.dtype.kind == "f" for a in arrays] if grad is None else grad
    mine = [tg.tensor(a, requires_grad=g) for a, g in zip(arrays, grad, strict=True)]
    yours = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grad, strict=True)]
    out, expected = ours(*mine), theirs(*yours)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=atol)
    assert out.dtype == np.float64 and out.shape == tuple(expected.shape)
    if not any(grad):
        return
    weights = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(weights)
    expected.backward(torch.tensor(weights))
    for a, b in zip(mine, yours, strict=True):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


def torch_error(torch, fn):
    """The exception type PyTorch raises from ``fn`` (warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as exc:
            return type(exc)
    raise AssertionError("PyTorch raised nothing")


# --------------------------------------------------------------------------- cross-entropy, nll
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize(
    ("target", "weighted", "ignore_index"),
    [
        ([0, 3, 1, -100, 2, 3], True, -100),  # weights and an ignored sample
        ([0, 3, 1, -100, 2, -100], False, -100),  # ignored samples only
        ([0, 3, 1, 1, 2, 3], False, 1),  # ignore_index is a real class
        ([0, 3, 1, 1, 2, 3], True, 3),
        ([0, 3, 1, 1, 2, 3], True, -100),  # weights only
    ],
)
def test_cross_entropy_weight_and_ignore_index(
    torch, reduction, smoothing, target, weighted, ignore_index
):
    logits = RNG.standard_normal((6, 4))
    weight = RNG.uniform(0.2, 2.0, 4) if weighted else None
    target = np.array(target)

    def call(module, x):
        w = None if weight is None else module.tensor(weight)
        fn = F.cross_entropy if module is tg else torch.nn.functional.cross_entropy
        return fn(x, module.tensor(target), weight=w, ignore_index=ignore_index,
                  reduction=reduction, label_smoothing=smoothing)  # fmt: skip

    compare(torch, lambda x: call(tg, x), lambda x: call(torch, x), [logits])


def test_cross_entropy_default_path_is_unchanged_by_the_new_arguments():
    """No weight and nothing to ignore: the fused fast path, the same bits as before."""
    logits = tg.tensor(RNG.standard_normal((5, 3)), requires_grad=True)
    target = np.array([0, 2, 1, 1, 0])
    plain = F.cross_entropy(logits, target)
    unit = F.cross_entropy(logits, target, weight=tg.ones(3, dtype=tg.float64))
    assert plain.item() == pytest.approx(unit.item(), rel=1e-15)
    (g_plain,) = tg.grad(plain, [logits])
    (g_unit,) = tg.grad(unit, [logits])
    np.testing.assert_allclose(g_plain.numpy(), g_unit.numpy(), rtol=1e-14, atol=1e-17)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial_and_single_sample_with_weights(torch, reduction):
    x = RNG.standard_normal((2, 4, 3))
    target = np.array([[0, 1, -100], [3, 2, 1]])
    w = RNG.uniform(0.5, 2.0, 4)
    compare(
        torch,
        lambda a: F.cross_entropy(a, target, weight=tg.tensor(w), reduction=reduction,
                                  label_smoothing=0.1),
        lambda a: torch.nn.functional.cross_entropy(
            a, torch.tensor(target), weight=torch.tensor(w), reduction=reduction,
            label_smoothing=0.1),
        [x],
    )  # fmt: skip
    single = RNG.standard_normal(4)
    compare(
        torch,
        lambda a: F.cross_entropy(a, np.array(2), weight=tg.tensor(w), reduction=reduction),
        lambda a: torch.nn.functional.cross_entropy(
            a, torch.tensor(2), weight=torch.tensor(w), reduction=reduction
        ),
        [single],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_with_class_probabilities(torch, reduction, smoothing):
    logits = RNG.standard_normal((5, 3))
    probs = RNG.random((5, 3))
    probs /= probs.sum(axis=1, keepdims=True)
    w = RNG.uniform(0.5, 2.0, 3)
    compare(
        torch,
        lambda a, p: F.cross_entropy(a, p, weight=tg.tensor(w), reduction=reduction,
                                     label_smoothing=smoothing),
        lambda a, p: torch.nn.functional.cross_entropy(
            a, p, weight=torch.tensor(w), reduction=reduction, label_smoothing=smoothing),
        [logits, probs],
    )  # fmt: skip


def test_cross_entropy_with_probabilities_of_no_classes_has_a_nan_mean():
    """PyTorch divides the sum by numel / classes: 0 / 0 without classes ("sum": 0)."""
    for shape in [(0,), (3, 0)]:
        logits = tg.zeros(*shape, requires_grad=True)
        assert np.isnan(F.cross_entropy(logits, tg.zeros(*shape)).item())
        assert F.cross_entropy(logits, tg.zeros(*shape), reduction="sum").item() == 0


def test_every_target_ignored_gives_nan_mean_and_zero_gradient(torch):
    logits = RNG.standard_normal((3, 4))
    target = np.array([-100, -100, -100])
    for ours, theirs in (
        (F.cross_entropy, torch.nn.functional.cross_entropy),
        (F.nll_loss, torch.nn.functional.nll_loss),
    ):
        x = tg.tensor(logits, requires_grad=True)
        y = torch.tensor(logits, requires_grad=True)
        out, expected = ours(x, target), theirs(y, torch.tensor(target))
        assert np.isnan(out.item()) and np.isnan(expected.item())
        out.backward()
        expected.backward()
        np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4)))
        assert ours(tg.tensor(logits), target, reduction="sum").item() == 0.0


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((5, 3), [0, 2, -100, 1, 1]),
        ((2, 3, 4), [[0, 1, 2, -100], [2, 2, 0, 1]]),
        ((3,), 1),
        ((0, 3), []),
    ],
)
def test_nll_loss_weight_ignore_index_and_shapes(torch, reduction, shape, target):
    log_probs = RNG.standard_normal(shape)
    target = np.array(target, dtype=np.int64)
    w = RNG.uniform(0.2, 2.0, 3)
    if reduction == "mean" and target.size == 0:
        pytest.skip("the mean of nothing: NaN (checked in the all-ignored test)")
    compare(
        torch,
        lambda a: F.nll_loss(a, target, weight=tg.tensor(w), reduction=reduction),
        lambda a: torch.nn.functional.nll_loss(
            a, torch.tensor(target), weight=torch.tensor(w), reduction=reduction
        ),
        [log_probs],
    )
    classes = np.where(target == -100, 0, target)  # ignore a real class instead
    compare(
        torch,
        lambda a: F.nll_loss(a, classes, ignore_index=1, reduction=reduction),
        lambda a: torch.nn.functional.nll_loss(
            a, torch.tensor(classes), ignore_index=1, reduction=reduction
        ),
        [log_probs],
    )


@pytest.mark.parametrize(
    ("call", "ours_type"),
    [
        (lambda f, m: f.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 5])), IndexError),
        (lambda f, m: f.nll_loss(m.zeros(3, 4), m.tensor([0, 1])), ValueError),
        (lambda f, m: f.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 2]), weight=m.ones(3)),
         RuntimeError),
        (lambda f, m: f.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 2]), reduction="avg"),
         ValueError),
        (lambda f, m: f.cross_entropy(m.zeros(3, 4), m.tensor([0, 1, 2]), weight=m.ones(3)),
         RuntimeError),
        (lambda f, m: f.cross_entropy(m.zeros(3, 4), m.tensor([0, -100, 7])), IndexError),
        (lambda f, m: f.cross_entropy(m.zeros(3, 4), m.tensor([0, 1])), ValueError),
        # (N, C, d1, ...) with a target of the wrong spatial shape; wrong target dtypes
        (lambda f, m: f.cross_entropy(m.zeros(2, 4, 3), m.zeros(2, 4).long()), RuntimeError),
        (lambda f, m: f.nll_loss(m.zeros(2, 4, 3), m.zeros(2, 2).long()), RuntimeError),
        (lambda f, m: f.cross_entropy(m.zeros(2, 4, 3), m.zeros(2, 3)), RuntimeError),
        (lambda f, m: f.nll_loss(m.zeros(2, 4), m.zeros(2)), RuntimeError),
        (lambda f, m: f.cross_entropy(m.zeros(2, 4), m.zeros(2, 4).long()), RuntimeError),
        (lambda f, m: f.cross_entropy(m.zeros(3, 4), m.zeros(3, 2).long()), RuntimeError),
        # probabilities refuse a real ignore_index (a negative one is accepted, as PyTorch)
        (lambda f, m: f.cross_entropy(m.zeros(2, 4), m.zeros(2, 4), ignore_index=0),
         RuntimeError),
        (lambda f, m: f.cross_entropy(m.zeros(2, 4), m.tensor([0, 1]), label_smoothing=1.5),
         RuntimeError),
        (lambda f, m: f.cross_entropy(m.zeros(2, 4), m.zeros(2, 4), label_smoothing=2.5),
         RuntimeError),
    ],
)  # fmt: skip
def test_classification_errors_have_pytorchs_types(torch, call, ours_type):
    assert torch_error(torch, lambda: call(torch.nn.functional, torch)) is ours_type
    with pytest.raises(ours_type):
        call(F, tg)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize(("smoothing", "ignore_index"), [(0.0, -100), (0.1, -100), (0.0, 2)])
def test_class_axis_one_with_two_spatial_axes_and_ignored_targets(
    torch, fn, reduction, smoothing, ignore_index
):
    """(N, C, d1, d2) logits and (N, d1, d2) targets, some ignored: "mean" is over the
    counted targets only (minGPT's -1 targets, a segmentation mask's 255)."""
    x = RNG.standard_normal((2, 5, 3, 4))
    target = RNG.integers(0, 5, (2, 3, 4))
    target[0, 1, :2] = ignore_index
    extra = {"label_smoothing": smoothing} if fn == "cross_entropy" else {}
    if fn == "nll_loss" and smoothing:
        pytest.skip("nll_loss has no label_smoothing")
    compare(
        torch,
        lambda a: getattr(F, fn)(a, target, ignore_index=ignore_index, reduction=reduction,
                                 **extra),
        lambda a: getattr(torch.nn.functional, fn)(a, torch.tensor(target),
                                                   ignore_index=ignore_index,
                                                   reduction=reduction, **extra),
        [x],
    )  # fmt: skip


def test_class_axis_one_matches_the_flattened_two_dimensional_loss():
    """Without torch: (N, C, L) is (N·L, C) after moving the class axis last."""
    x = tg.tensor(RNG.standard_normal((3, 4, 5)), requires_grad=True)
    target = RNG.integers(0, 4, (3, 5))
    target[1, 2] = -1
    loss = F.cross_entropy(x, target, ignore_index=-1)
    flat = F.cross_entropy(x.permute(0, 2, 1).reshape(-1, 4), target.reshape(-1), ignore_index=-1)
    assert loss.item() == pytest.approx(flat.item(), rel=1e-14)
    kept = target.reshape(-1) != -1
    logp = F.log_softmax(x.permute(0, 2, 1).reshape(-1, 4), dim=1).numpy()
    picked = logp[np.arange(15), np.where(kept, target.reshape(-1), 0)]
    assert loss.item() == pytest.approx(-picked[kept].mean(), rel=1e-12)
    loss.backward()
    assert np.all(x.grad.numpy()[1, :, 2] == 0)  # the ignored position gets no gradient
    none = F.cross_entropy(x, target, ignore_index=-1, reduction="none")
    assert none.shape == (3, 5) and none[1, 2].item() == 0.0
    assert not np.signbit(none[1, 2].item())  # +0, as PyTorch, not -0


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_all_targets_ignored_gives_nan_and_a_zero_gradient(torch, fn):
    x = tg.tensor(RNG.standard_normal((2, 3, 4)), requires_grad=True)
    target = np.full((2, 4), -100)
    loss = getattr(F, fn)(x, target)
    expected = getattr(torch.nn.functional, fn)(torch.tensor(x.numpy()), torch.tensor(target))
    assert np.isnan(loss.item()) and np.isnan(expected.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3, 4)))
    assert getattr(F, fn)(x, target, reduction="sum").item() == 0.0


def test_nll_loss_counted_targets_are_range_checked():
    with pytest.raises(IndexError, match="target class -5 is out of range for 3 classes"):
        F.nll_loss(tg.zeros(2, 3), [-100, -5])
    with pytest.raises(IndexError, match="target class 3 is out of range"):
        F.nll_loss(tg.zeros(2, 3), [3, 1], ignore_index=1)


# --------------------------------------------------------------------------- binary cross-entropy
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_torch(torch, reduction):
    p = RNG.uniform(0.02, 0.98, (4, 3))
    y = RNG.random((4, 3))
    w = RNG.uniform(0.5, 2.0, 3)
    compare(
        torch,
        lambda a, b: F.binary_cross_entropy(a, b, weight=tg.tensor(w), reduction=reduction),
        lambda a, b: torch.nn.functional.binary_cross_entropy(
            a, b, weight=torch.tensor(w), reduction=reduction
        ),
        [p, y],
    )


def test_binary_cross_entropy_clamps_its_logs_as_pytorch(torch):
    """p of exactly 0 or 1: each log is clamped at −100, the gradient is PyTorch's
    (p − y)/max(p(1 − p), 1e-12), and the target's gradient is −logit(p), infinite there."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 1e-30, 0.5])
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.3])
    compare(
        torch,
        lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
        lambda a, b: torch.nn.functional.binary_cross_entropy(a, b, reduction="none"),
        [p, y],
        grad=[True, False],
    )
    mine, yours = tg.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    target_mine, target_yours = (
        tg.tensor(y, requires_grad=True),
        torch.tensor(y, requires_grad=True),
    )
    F.binary_cross_entropy(mine, target_mine, reduction="sum").backward()
    torch.nn.functional.binary_cross_entropy(yours, target_yours, reduction="sum").backward()
    np.testing.assert_array_equal(target_mine.grad.numpy(), target_yours.grad.numpy())


def test_binary_cross_entropy_errors(torch):
    f = torch.nn.functional
    cases = [
        (lambda f, m: f.binary_cross_entropy(m.tensor([0.5, 1.5]), m.tensor([1.0, 0.0]))),
        (lambda f, m: f.binary_cross_entropy(m.full((2, 3), 0.5), m.ones(3))),
        (lambda f, m: f.binary_cross_entropy(m.full((2, 3), 0.5), m.ones(2, 3), m.ones(2))),
    ]
    for call, ours_type in zip(cases, (RuntimeError, ValueError, RuntimeError), strict=True):
        assert torch_error(torch, lambda call=call: call(f, torch)) is ours_type
        with pytest.raises(ours_type):
            call(F, tg)
    with pytest.raises(RuntimeError, match="should be between 0 and 1"):
        F.binary_cross_entropy(tg.tensor([np.nan]), tg.tensor([1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_with_logits_pos_weight(torch, reduction, weighted):
    x = RNG.standard_normal((4, 3)) * 4
    x[0] = [-800.0, 0.0, 800.0]  # stable at the extremes
    y = RNG.random((4, 3))
    pos = RNG.uniform(0.5, 3.0, 3)
    w = RNG.uniform(0.5, 2.0, (4, 1))
    compare(
        torch,
        lambda a, b, pw, ww: F.binary_cross_entropy_with_logits(
            a, b, weight=ww if weighted else None, reduction=reduction, pos_weight=pw
        ),
        lambda a, b, pw, ww: torch.nn.functional.binary_cross_entropy_with_logits(
            a, b, weight=ww if weighted else None, reduction=reduction, pos_weight=pw
        ),
        [x, y, pos, w],
        grad=[True, True, False, False],  # PyTorch refuses gradients for the weights
    )
    # tensorgrad differentiates the weights too (by composition): checked by the registry


def test_binary_cross_entropy_with_logits_weight_only(torch):
    x, y, w = RNG.standard_normal((3, 2)), RNG.random((3, 2)), RNG.uniform(0.5, 2, 2)
    compare(
        torch,
        lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, weight=c),
        lambda a, b, c: torch.nn.functional.binary_cross_entropy_with_logits(a, b, weight=c),
        [x, y, w],
        grad=[True, True, False],
    )
    with pytest.raises(RuntimeError, match=r"pos_weight of shape \(2,\) does not broadcast"):
        F.binary_cross_entropy_with_logits(tg.zeros(3, 3), tg.zeros(3, 3), pos_weight=tg.ones(2))


# --------------------------------------------------------------------------- regression
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("l1_loss", {}),
        ("smooth_l1_loss", {}),
        ("smooth_l1_loss", {"beta": 0.5}),
        ("smooth_l1_loss", {"beta": 0.0}),
        ("huber_loss", {}),
        ("huber_loss", {"delta": 0.3}),
    ],
)
def test_l1_family_matches_torch_including_kinks(torch, reduction, name, kwargs):
    """Differences at the kinks (0, ±β) included: the gradient there is PyTorch's."""
    y = RNG.standard_normal(9)
    beta = kwargs.get("beta", kwargs.get("delta", 1.0))
    d = np.array([0.0, beta, -beta, 0.3 * beta, 2.0, -2.0, 1e-3, -0.7, 5.0])
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    compare(
        torch,
        lambda a, b: ours(a, b, reduction=reduction, **kwargs),
        lambda a, b: theirs(a, b, reduction=reduction, **kwargs),
        [y + d, y],
    )


def test_l1_family_errors(torch):
    f = torch.nn.functional
    assert torch_error(torch, lambda: f.smooth_l1_loss(torch.ones(2), torch.ones(2), beta=-1))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        F.smooth_l1_loss(tg.ones(2), tg.ones(2), beta=-1.0)
    for delta in (0.0, -1.0):
        assert torch_error(
            torch, lambda d=delta: f.huber_loss(torch.ones(2), torch.ones(2), delta=d)
        )
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive"):
            F.huber_loss(tg.ones(2), tg.ones(2), delta=delta)
    for loss in (F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        name = loss.__name__
        with pytest.raises(ValueError, match=rf"{name}: input of shape \(4, 1\) and target"):
            loss(tg.zeros(4, 1), tg.zeros(4))  # PyTorch warns and broadcasts: see porting.md
        with pytest.raises(ValueError, match="reduction must be"):
            loss(tg.zeros(2), tg.zeros(2), reduction="avg")


# --------------------------------------------------------------------------- KL divergence
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(torch, reduction, log_target):
    x = np.log(RNG.dirichlet(np.ones(4), size=3))
    t = RNG.dirichlet(np.ones(4), size=3)
    if log_target:
        t = np.log(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'mean' warns in both
        compare(
            torch,
            lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
            lambda a, b: torch.nn.functional.kl_div(
                a, b, reduction=reduction, log_target=log_target
            ),
            [x, t],
        )


def test_kl_div_zero_target_counts_nothing(torch):
    x = np.log(RNG.dirichlet(np.ones(3), size=2))
    t = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    compare(
        torch,
        lambda a, b: F.kl_div(a, b, reduction="none"),
        lambda a, b: torch.nn.functional.kl_div(a, b, reduction="none"),
        [x, t],
        grad=[True, False],
    )
    # the target's gradient where it is 0: t·log t counts as flat there, leaving −x; PyTorch
    # gives NaN (see docs/porting.md)
    target = tg.tensor(t, requires_grad=True)
    F.kl_div(tg.tensor(x), target, reduction="sum").backward()
    zero = t == 0
    np.testing.assert_array_equal(target.grad.numpy()[zero], -x[zero])
    np.testing.assert_allclose(target.grad.numpy()[~zero], np.log(t[~zero]) + 1 - x[~zero])


def test_kl_div_mean_warns_and_bad_reduction_raises(torch):
    x, t = tg.zeros(2, 3), tg.full((2, 3), 1 / 3)
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(x, t)
    assert torch_error(torch, lambda: torch.nn.functional.kl_div(x.numpy(), t, "avg"))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'batchmean'"):
        F.kl_div(x, t, reduction="avg")


def test_legacy_size_average_and_reduce_map_as_pytorch(torch):
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    for kwargs in ({"size_average": False}, {"reduce": False}, {"size_average": True}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = torch.nn.functional.l1_loss(torch.tensor(x), torch.tensor(y), **kwargs)
        np.testing.assert_allclose(F.l1_loss(tg.tensor(x), y, **kwargs).numpy(), expected.numpy())


# --------------------------------------------------------------------------- modules
@pytest.mark.parametrize(
    ("module", "function", "kwargs", "make"),
    [
        ("L1Loss", "l1_loss", {"reduction": "sum"}, "regression"),
        ("SmoothL1Loss", "smooth_l1_loss", {"beta": 0.5}, "regression"),
        ("HuberLoss", "huber_loss", {"delta": 2.0, "reduction": "none"}, "regression"),
        ("BCELoss", "binary_cross_entropy", {"reduction": "sum"}, "probabilities"),
        ("BCEWithLogitsLoss", "binary_cross_entropy_with_logits", {}, "logits"),
        ("KLDivLoss", "kl_div", {"reduction": "batchmean", "log_target": True}, "log"),
        ("CrossEntropyLoss", "cross_entropy", {"ignore_index": 1, "label_smoothing": 0.1},
         "classes"),
        ("NLLLoss", "nll_loss", {"ignore_index": 0, "reduction": "sum"}, "classes"),
    ],
)  # fmt: skip
def test_loss_modules_match_their_functions_and_torch(torch, module, function, kwargs, make):
    x = RNG.standard_normal((4, 3))
    target = {
        "regression": RNG.standard_normal((4, 3)),
        "probabilities": RNG.random((4, 3)),
        "logits": RNG.random((4, 3)),
        "log": np.log(RNG.dirichlet(np.ones(3), size=4)),
        "classes": np.array([0, 2, 1, 1]),
    }[make]
    if make == "probabilities":
        x = RNG.uniform(0.05, 0.95, (4, 3))
    ours = getattr(nn, module)(**kwargs)
    theirs = getattr(torch.nn, module)(**kwargs)
    out = ours(tg.tensor(x), tg.tensor(target))
    expected = theirs(torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(
        out.numpy(), getattr(F, function)(tg.tensor(x), tg.tensor(target), **kwargs).numpy()
    )
    assert repr(ours) == repr(theirs)


def test_class_weights_are_buffers_as_in_pytorch(torch):
    w = tg.tensor([1.0, 2.0, 0.5])
    for name in ("CrossEntropyLoss", "NLLLoss", "BCELoss"):
        ours = getattr(nn, name)(weight=w)
        theirs = getattr(torch.nn, name)(weight=torch.tensor([1.0, 2.0, 0.5]))
        assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
        assert ours.weight is w
        assert list(getattr(nn, name)().state_dict()) == list(
            getattr(torch.nn, name)().state_dict()
        )
    ours = nn.BCEWithLogitsLoss(weight=w, pos_weight=tg.tensor([3.0, 1.0, 1.0]))
    theirs = torch.nn.BCEWithLogitsLoss(weight=torch.ones(3), pos_weight=torch.ones(3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = RNG.standard_normal((2, 3))
    y = RNG.random((2, 3))
    expected = F.binary_cross_entropy_with_logits(
        tg.tensor(x), y, weight=w, pos_weight=tg.tensor([3.0, 1.0, 1.0])
    )
    assert ours(tg.tensor(x), y).item() == expected.item()


def test_cross_entropy_loss_module_passes_weight_and_ignore_index(torch):
    x = RNG.standard_normal((5, 3))
    target = np.array([0, 2, -100, 1, 2])
    w = np.array([0.3, 1.0, 2.0])
    ours = nn.CrossEntropyLoss(weight=tg.tensor(w))(tg.tensor(x), tg.tensor(target))
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(w))(
        torch.tensor(x), torch.tensor(target)
    )
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)
    target = np.array([0, 2, 2, 1, 0])
    ours = nn.NLLLoss(weight=tg.tensor(w), ignore_index=2)(tg.tensor(x), tg.tensor(target))
    theirs = torch.nn.NLLLoss(weight=torch.tensor(w), ignore_index=2)(
        torch.tensor(x), torch.tensor(target)
    )
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)
