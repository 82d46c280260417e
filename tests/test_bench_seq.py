"""Smoke tests for the seq section of ``python -m bench``: it runs with tiny settings and
produces well-formed Markdown, the two libraries agree on the first step for every model
the report uses, and it refuses to time models that disagree.

Nothing here asserts anything about speed: timings on a shared machine are not a test.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench import __main__ as cli
from bench import common, seq
from tests.test_bench import smoke_args, tables


def test_seq_reports_agreement_interleaved_and_alone():
    text = seq.run(smoke_args())
    agreement, interleaved, ops, *alone = tables(text)
    names = [config.name for config in seq.SMOKE]
    assert [row[0] for row in agreement[2:]] == names
    assert [row[0] for row in interleaved[2:]] == names
    assert all(float(row[1]) > 0 for row in interleaved[2:])
    assert len(ops) == 2 + len(seq.op_cases(__import__("tensorgrad"), seq.SMOKE[0]))
    if common.torch() is None:
        assert alone == [] and all(row[2] == "n/a" for row in interleaved[2:])
        return
    for row in agreement[2:]:
        assert float(row[3]) <= seq.TOLERANCE and float(row[4]) <= seq.TOLERANCE
    for row in interleaved[2:]:
        assert re.fullmatch(r"≥[\d.]+× (met|\*\*missed\*\*)", row[4])
    (rows,) = alone
    assert [row[0] for row in rows[2:]] == names[:1]  # smoke: the first model only
    assert all(re.fullmatch(r"[\d.]+×", row[3]) for row in rows[2:])


@pytest.mark.slow
@pytest.mark.parametrize("config", seq.FULL, ids=lambda c: c.kind + str(c.width))
def test_the_reports_models_have_pytorchs_shapes_and_agree(config):
    """The full-size models (one step each): the word model's parameter count is PyTorch's
    word_language_model's (2×200 LSTM, 10,000 words, untied), and tensorgrad's first step
    agrees with PyTorch's where it is installed."""
    import tensorgrad

    model = seq.build(tensorgrad, config)
    count = sum(p.numel() for p in model.parameters())
    if config.kind == "lstm":
        lstm = 2 * (4 * 200 * 200 + 4 * 200 * 200 + 8 * 200)
        assert count == 10_000 * 200 + lstm + 200 * 10_000 + 10_000
    weights = seq.initial_weights(config)
    assert set(weights) == set(model.state_dict())
    if common.torch() is None:
        pytest.skip("PyTorch is not installed")
    seq.check_agreement(seq.trainers(config, weights), seq.batches(config, 1)[0])


def test_agreement_check_refuses_different_weights():
    config = seq.SMOKE[0]
    weights = seq.initial_weights(config)
    found = seq.trainers(config, weights)
    if len(found) < 2:
        pytest.skip("PyTorch is not installed")
    other = {k: v * np.float32(1.01) for k, v in weights.items()}
    found[1] = seq.Trainer(common.torch(), "PyTorch", config, other)
    with pytest.raises(common.DisagreementError, match="refusing"):
        seq.check_agreement(found, seq.batches(config, 1)[0])


def test_seq_is_a_section_of_the_command_line():
    assert "seq" in cli.parse_args([]).only
    assert cli.parse_args(["--only", "seq"]).only == ["seq"]


def test_the_op_table_runs_each_op_of_the_block_forward_and_backward():
    """The per-op table (where a step's difference comes from) names every op of the block
    and times it; without PyTorch its columns say n/a."""
    rows = seq.op_rows(seq.SMOKE[0], rounds=1, warmup=0)
    assert [row[0] for row in rows] == list(seq.op_cases(__import__("tensorgrad"), seq.SMOKE[0]))
    assert all(float(row[1].replace(",", "")) > 0 for row in rows)
    if common.torch() is not None:
        assert all(re.fullmatch(r"[\d.]+× \([\d.]+–[\d.]+\)", row[3]) for row in rows)
