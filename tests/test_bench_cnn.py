"""Smoke tests for the cnn section of ``python -m bench``: it runs with tiny settings and
produces well-formed Markdown, and it refuses to time implementations that disagree.

Nothing here asserts anything about speed: timings on a shared machine are not a test.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench import __main__ as cli
from bench import cnn, common
from tests.test_bench import smoke_args, tables


def expected_implementations() -> list[str]:
    return [kind.name for kind in cnn.implementations()]


def test_cnn_reports_training_inference_and_memory():
    text = cnn.run(smoke_args())
    agreement, training, inference, peak, *alone = tables(text)
    assert [row[0] for row in agreement[2:]] == expected_implementations()[1:]
    for table in (training, inference):
        assert [row[0] for row in table[2:]] == expected_implementations()
        assert all(float(row[1].replace(",", "")) > 0 for row in table[2:])
        assert table[2][5] == "1"  # NumPy against itself
        goal = table[3][6]
        if common.torch() is not None:
            assert re.fullmatch(r"≥[\d.]+× (met|\*\*missed\*\*)", goal)
        else:
            assert goal == "(no PyTorch)"
    kinds = ["numpy", "tensorgrad"] + (["torch"] if common.torch() is not None else [])
    assert [row[0] for row in peak[2:]] == [cnn.IMPLEMENTATIONS[k].name for k in kinds]
    assert "**Batch 8**, training step" in text and "forward under `no_grad`" in text
    if common.torch() is None:
        assert alone == []
    else:  # each alone in its own process: a row per batch size and kind of step
        (rows,) = alone
        assert [row[:2] for row in rows[2:]] == [["8", "training"], ["8", "inference"]]
        for row in rows[2:]:
            assert float(row[2].replace(",", "")) > 0 and float(row[3].replace(",", "")) > 0
            assert re.fullmatch(r"[\d.]+×", row[4])
            assert re.fullmatch(r"≥[\d.]+× (met|\*\*missed\*\*)", row[5])


def test_the_three_implementations_agree_on_the_first_step():
    x, y, _ = cnn.load_data(16)
    params = cnn.init_params()
    summary = cnn.check_agreement([kind(params) for kind in cnn.implementations()], x, y)
    for row in tables(summary)[0][2:]:
        assert all(float(error) <= cnn.TOLERANCE for error in row[1:])


class _ForgetsTheReluMask(cnn.NumpyCNN):
    """A plausible bug in a hand-written backward: the first ReLU's mask left out."""

    name = "buggy"

    def loss_and_grads(self, x, y):
        loss, grads = super().loss_and_grads(x, y)
        grads[0] = grads[0] * 1.5
        return loss, grads


def test_agreement_check_refuses_a_disagreeing_implementation():
    x, y, _ = cnn.load_data(8)
    params = cnn.init_params()
    with pytest.raises(common.DisagreementError, match=r"buggy .*refusing"):
        cnn.check_agreement([cnn.NumpyCNN(params), _ForgetsTheReluMask(params)], x, y)


def test_the_numpy_reference_agrees_with_the_frameworks_in_float64():
    """In float64 the hand-written backward and the frameworks' agree to rounding (the bench
    compares them in float32, to a looser tolerance). Finite differences are no judge here:
    the network's many ReLU and max-pool kinks sit closer together than any useful ε."""
    x, y, _ = cnn.load_data(4)
    x = x.astype(np.float64)
    params = [p.astype(np.float64) for p in cnn.init_params()]
    loss, grads = cnn.NumpyCNN(params).loss_and_grads(x, y)
    ours = cnn.TensorgradCNN(params)
    ours.model.double()
    for tensor, value in zip(ours.tensors, params, strict=True):
        np.copyto(tensor.data, value)
    others = [(ours, ours.convert(x), ours.convert(y))]
    if common.torch() is not None:
        theirs = cnn.TorchCNN(params)
        theirs.model.double()
        others.append((theirs, theirs.convert(x), theirs.convert(y)))
    for impl, bx, by in others:
        other_loss, other_grads = impl.loss_and_grads(bx, by)
        assert other_loss == pytest.approx(loss, rel=1e-12)
        for g, r in zip(other_grads, grads, strict=True):
            assert common.relative_error(g, r) < 1e-12


def test_cnn_is_a_section_of_the_command_line():
    assert "cnn" in cli.parse_args([]).only
    assert cli.parse_args(["--only", "cnn"]).only == ["cnn"]
