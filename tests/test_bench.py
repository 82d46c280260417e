"""Smoke tests for ``python -m bench``: every section runs with tiny settings and produces
well-formed Markdown, and the MLP benchmark refuses to time implementations that disagree.

Nothing here asserts anything about speed: timings on a shared machine are not a test.
"""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest

from bench import __main__ as cli
from bench import checkpoint, common, loader, memory, mlp, ops, scalar


def smoke_args(*extra: str):
    return cli.parse_args(["--smoke", "--repeats", "1", *extra])


def tables(markdown: str) -> list[list[list[str]]]:
    """Every Markdown table as a list of rows of cells, checked for a well-formed shape."""
    found, current = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif current:
            header, separator, *rows = current
            assert all(re.fullmatch(r"-+:?", cell) for cell in separator), current
            assert rows, f"table without rows: {header}"
            assert all(len(row) == len(header) == len(separator) for row in rows), current
            found.append(current)
            current = []
    return found


def expected_implementations() -> list[str]:
    return [kind.name for kind in mlp.implementations()]


def test_mlp_reports_every_batch_size_and_implementation():
    text = mlp.run(smoke_args())
    found = tables(text)
    agreement, *training, inference = found
    assert [row[0] for row in agreement[2:]] == expected_implementations()[1:]
    assert len(training) == len(mlp.BATCH_SIZES)
    for table in [*training, inference]:
        names = [row[0] for row in table[2:]]
        assert names == expected_implementations()
        for row in table[2:]:
            assert float(row[1].replace(",", "")) > 0
        assert table[2][4] == "1 (reference)"
        assert re.fullmatch(r"≥[\d.]+× (met|\*\*missed\*\*)", table[3][6])
    for batch_size in mlp.BATCH_SIZES:
        assert f"**Batch {batch_size}**" in text
    if common.torch() is None:
        assert "PyTorch is not installed: skipped" in text


def test_agreement_check_passes_for_the_real_implementations():
    x, y, _ = mlp.load_data(64)
    params = mlp.init_params()
    summary = mlp.check_agreement([kind(params) for kind in mlp.implementations()], x, y)
    for row in tables(summary)[0][2:]:
        assert all(float(error) <= mlp.TOLERANCE for error in row[1:])


class _ForgetsToAverage(mlp.NumpyMLP):
    """A plausible bug: the gradient of a summed, not averaged, loss."""

    name = "buggy"

    def loss_and_grads(self, x, y):
        loss, grads = super().loss_and_grads(x, y)
        return loss, [g * len(x) for g in grads]


def test_agreement_check_refuses_a_disagreeing_implementation():
    x, y, _ = mlp.load_data(64)
    params = mlp.init_params()
    with pytest.raises(common.DisagreementError, match=r"buggy .*refusing"):
        mlp.check_agreement([mlp.NumpyMLP(params), _ForgetsToAverage(params)], x, y)


def test_main_refuses_to_report_when_implementations_disagree(monkeypatch, capsys, tmp_path):
    def wrong(self, x, y):
        loss, grads = original(self, x, y)
        return loss * 1.01, grads

    original = mlp.TensorgradMLP.loss_and_grads
    monkeypatch.setattr(mlp.TensorgradMLP, "loss_and_grads", wrong)
    output = tmp_path / "report.md"
    assert cli.main(["--smoke", "--only", "mlp", "--output", str(output)]) == 1
    captured = capsys.readouterr()
    assert "refusing to report" in captured.err
    assert "samples/s" not in captured.out
    assert not output.exists()


def test_a_chunked_task_times_its_steps_but_not_the_warm_up_step():
    calls = []
    task = mlp._chunked_task(calls.append, ["a", "b", "c"], chunk=2)
    first, second = task(), task()
    assert calls == ["a", "b", "c", "a", "b", "c"]  # 1 untimed + 2 timed, cycling
    assert isinstance(first, float) and isinstance(second, float)
    slow_warm_up = mlp._chunked_task(lambda item: item and time.sleep(0.05), [True, False], 1)
    times = common.interleaved({"t": slow_warm_up}, repeats=2, warmup=0)
    assert all(t < 0.04 for t in times["t"])  # the sleeping first call is left out


def test_ops_tables():
    text = ops.run(smoke_args())
    small, large = tables(text)
    assert [row[0] for row in small[2:]][:2] == ["add", "mul"]
    assert len(small[2:]) == len(ops.small_cases(np.random.default_rng(0)))
    for row in small[2:]:
        assert float(row[1].replace(",", "")) > 0
    for row in large[2:]:
        assert re.fullmatch(r"[\d.]+× \([\d.]+–[\d.]+\)", row[2])


def test_ops_refuse_a_wrong_hand_written_backward():
    a = np.ones((2, 2), np.float32)
    case = ops.Case("bad", (a,), lambda x: x.exp(), np.exp, lambda g, o, x: (g,))
    with pytest.raises(common.DisagreementError, match="bad"):
        ops.measure(case, repeats=1, seconds=1e-4)


def test_scalar_chain_is_right_and_deeper_than_the_recursion_limit():
    text = scalar.run(smoke_args())
    (table,) = tables(text)
    assert [row[-1] for row in table[2:]] == ["yes", "yes", "yes"]
    assert table[3][0].startswith("micrograd's design")
    assert "20,000-op chain" in table[4][0]
    assert re.search(r"µs/op, [\d.]+× \([\d.]+–[\d.]+\) micrograd's speed", text)
    assert re.search(r"≥1×: (met|\*\*missed\*\*)\)", text)


def test_the_micrograd_reference_differentiates_the_chain_right():
    """The reference engine is checked like tensorgrad's: value and gradient of the chain
    against forward mode, on a chain deeper than the recursion limit."""
    n = 3 * sys.getrecursionlimit()
    *_, correct = scalar.measure(n, scalar.ClosureValue)
    assert correct
    x = scalar.ClosureValue(0.5)
    y = (x * x - 1.0).tanh()
    y.backward()
    assert x.grad == pytest.approx(2 * 0.5 * (1 - np.tanh(0.25 - 1.0) ** 2))


def test_memory_tables_come_from_subprocesses():
    text = memory.run(smoke_args())
    epoch, flat = tables(text)
    assert [row[0] for row in epoch[2:]] == expected_implementations()
    assert all(float(row[2].replace(",", "")) > 0 for row in epoch[2:])
    assert [row[0] for row in flat[2:]] == ["after step 10", "after step 30"]
    assert re.search(r"Memory over 30 steps: (flat|\*\*growing\*\*)", text)


def test_loader_table():
    text = loader.run(smoke_args())
    (table,) = tables(text)
    assert [row[0].split(",")[0] for row in table[2:]] == [
        "MNIST + ToTensor + Normalize",
        "MNIST + ToTensor + Normalize",
        "TensorDataset (N×784 float32)",
    ]
    assert all(float(row[1].replace(",", "")) > 0 for row in table[2:])
    assert re.search(r"Batched MNIST transforms: [\d.]+× \([\d.]+–[\d.]+\)", text)


def test_checkpoint_table():
    text = checkpoint.run(smoke_args())
    (table,) = tables(text)
    names = [row[0] for row in table[2:]]
    assert names[:3] == ["tg.save", "tg.load", "tg.load(mmap=True)"]
    assert len(names) in (3, 7)  # with PyTorch: its save and load, and each reading the other's
    assert all(float(row[3].replace(",", "")) > 0 for row in table[2:])


def test_main_prints_and_writes_the_report(tmp_path, capsys):
    output = tmp_path / "report.md"
    assert cli.main(["--smoke", "--only", "scalar", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# tensorgrad benchmarks")
    assert output.read_text(encoding="utf-8") + "\n" == printed
    machine = tables(printed)[0]
    assert [row[0] for row in machine[2:]] == [
        "CPU", "Cores", "OS", "Python", "NumPy", "BLAS", "PyTorch", "Load average at start",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "argv", [["--only", "mlp,nonsense"], ["--repeats", "0"], ["--threads", "0"]]
)
def test_command_line_rejects_bad_options(argv):
    with pytest.raises(SystemExit):
        cli.parse_args(argv)


def test_timing_helpers():
    calls = []
    times = common.interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warmup, then rotating order
    assert {name: len(t) for name, t in times.items()} == {"a": 3, "b": 3}
    summary = common.Summary.of([3.0, 1.0, 2.0])
    assert (summary.median, summary.low, summary.high) == (2.0, 1.0, 3.0)
    assert common.Summary.of([1.0, 2.0]).inverted(4.0) == common.Summary(8 / 3, 2.0, 4.0)
    assert common.relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0


def test_func_section_tables_and_targets():
    from bench import func

    text = func.run(smoke_args())
    per_sample, jvp, jac = tables(text)
    names = [row[0] for row in per_sample[2:]]
    assert names[:2] == ["tensorgrad vmap(grad)", "tensorgrad loop of backward"]
    assert (common.torch() is not None) == ("PyTorch torch.func vmap(grad)" in names)
    assert per_sample[3][3] == "1.00× (1.00–1.00)"  # the loop against itself
    assert jvp[2][0] == "forward pass (logits)" and jvp[3][0].startswith("tg.func.jvp")
    assert [row[4] for row in jac[2:]] and all(row[4] in ("jacfwd", "jacrev") for row in jac[2:])
    assert re.search(r"the loop's speed \(target ≥5×: (met|\*\*missed\*\*)\)", text)
    assert re.search(r"JVP costs [\d.]+× \([\d.]+–[\d.]+\) its forward pass \(target ≤3×", text)


def test_func_section_refuses_wrong_per_sample_gradients(monkeypatch):
    import tensorgrad as tg
    from bench import func

    right = tg.func.grad

    def doubled(f, *args, **kwargs):
        inner = right(f, *args, **kwargs)
        return lambda *a: [2 * g for g in inner(*a)]

    monkeypatch.setattr(tg.func, "grad", doubled)  # vmap(grad) goes wrong, the loop does not
    with pytest.raises(common.DisagreementError, match="per-sample gradients: .*refusing"):
        func.run(smoke_args())


def test_vmap_section_tables_and_targets():
    from bench import vmap

    text = vmap.run(smoke_args())
    cnn, mlp, jac = tables(text)
    names = [row[0] for row in cnn[2:]]
    assert names[:2] == ["tensorgrad vmap(grad)", "tensorgrad loop of backward"]
    assert (common.torch() is not None) == ("PyTorch torch.func vmap(grad)" in names)
    assert cnn[3][3] == "1.00× (1.00–1.00)"  # the loop against itself
    assert mlp[2][0] == "tensorgrad vmap(grad)"
    assert [row[0] for row in jac[2:4]] == [
        "jacrev, one vmap-ed backward",
        "jacrev, a backward per row",
    ]
    assert re.search(r"tensorgrad's loop \(target ≥1×: (met|\*\*missed\*\*)\)", text)
    assert re.search(r"the row-by-row path \(target ≥5×: (met|\*\*missed\*\*)\)", text)


def test_vmap_section_refuses_wrong_per_sample_gradients(monkeypatch):
    import tensorgrad as tg
    from bench import vmap

    right = tg.func.grad

    def doubled(f, *args, **kwargs):
        inner = right(f, *args, **kwargs)
        return lambda *a: {k: 2 * g for k, g in inner(*a).items()}

    monkeypatch.setattr(tg.func, "grad", doubled)
    with pytest.raises(common.DisagreementError, match="CNN per-sample gradients: .*refusing"):
        vmap.run(smoke_args())
