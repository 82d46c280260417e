"""What every benchmark shares: settings, the machine, interleaved timing and Markdown tables.

Timings on a shared machine are noisy, so nothing here trusts a single measurement: the
implementations being compared run in turn within each repeat (the order rotating from repeat
to repeat, so none always runs first or last), and the reports give medians and the min–max
spread over the repeats.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np


class DisagreementError(RuntimeError):
    """Implementations being compared do not compute the same thing, so timing them would
    mean nothing: benchmarks raise this instead of reporting."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How much work a benchmark does: ``full`` for the report, ``quick`` for a look, and
    ``smoke`` for the tests (tiny sizes; its numbers mean nothing)."""

    size: str
    repeats: int

    def pick(self, full: Any, quick: Any, smoke: Any) -> Any:
        """The value for this size."""
        return {"full": full, "quick": quick, "smoke": smoke}[self.size]

    @property
    def warmup(self) -> int:
        """Untimed rounds before the timed ones."""
        return 0 if self.size == "smoke" else 1

    @property
    def pause(self) -> float:
        """Seconds to let thread pools go idle between timed tasks (see :func:`interleaved`)."""
        return 0.0 if self.size == "smoke" else 0.15


def settings(args: argparse.Namespace) -> Settings:
    """The settings chosen on the command line (``--quick``, ``--repeats``)."""
    size = "smoke" if getattr(args, "smoke", False) else "quick" if args.quick else "full"
    default = {"full": 15, "quick": 5, "smoke": 1}[size]
    return Settings(size=size, repeats=args.repeats or default)


# --------------------------------------------------------------------------- the machine
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_thread_limit: Any = None  # threadpoolctl's limiter, kept alive while the limit holds


def limit_threads(threads: int) -> None:
    """Make NumPy's BLAS use ``threads`` threads (PyTorch follows, see :func:`torch`).

    Call before anything reads :func:`blas`; without threadpoolctl the environment variable
    that OpenBLAS, MKL and OpenMP read is set instead, which only affects new processes.
    """
    global _thread_limit
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    _thread_limit = threadpool_limits(limits=threads, user_api="blas")
    blas.cache_clear()


@functools.lru_cache(maxsize=1)
def blas() -> tuple[str, int]:
    """NumPy's BLAS (library and version) and the number of threads it uses."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)", usable_cores()
    pools = [p for p in threadpool_info() if p["user_api"] == "blas"]
    pools.sort(key=lambda p: "numpy" not in p["filepath"])  # NumPy's own first
    if not pools:
        return "none found", 1
    pool = pools[0]
    return f"{pool['internal_api']} {pool['version']}", int(pool["num_threads"])


@functools.lru_cache(maxsize=1)
def torch() -> ModuleType | None:
    """PyTorch with its thread count set to NumPy's BLAS threads, or None if not installed."""
    threads = blas()[1]  # read before torch loads its own thread pools
    try:
        import torch as torch_module
    except ImportError:
        return None
    torch_module.set_num_threads(threads)
    return torch_module


def torch_status() -> str:
    """A line for reports: the PyTorch version and threads, or why it is not compared."""
    module = torch()
    if module is None:
        return "not installed: PyTorch columns are skipped (`make bench-torch` installs it)"
    return f"{module.__version__}, {module.get_num_threads()} threads (set to match NumPy's BLAS)"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: above 0 means other work shares the CPUs."""
    try:
        return ", ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"


def machine_section() -> str:
    blas_name, threads = blas()
    rows = [
        ("CPU", cpu_model()),
        ("Cores", f"{usable_cores()} usable ({os.cpu_count()} online)"),
        ("OS", platform.platform(terse=True)),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("NumPy", np.__version__),
        ("BLAS", f"{blas_name}, {threads} threads"),
        ("PyTorch", torch_status()),
        ("Load average at start", load_average()),
    ]
    return "## Machine\n\n" + table(["", ""], rows)


# --------------------------------------------------------------------------- timing
def interleaved(
    tasks: Mapping[str, Callable[[], object]],
    repeats: int,
    warmup: int = 1,
    pause: float = 0.0,
) -> dict[str, list[float]]:
    """Seconds taken by each task in each of ``repeats`` rounds.

    Every round runs every task once; the order rotates by one each round. ``warmup`` untimed
    rounds come first (caches, lazy imports, the allocator's first requests). ``pause``
    seconds of sleep before each timed task let the thread pools of the previous one go idle:
    OpenBLAS and OpenMP workers spin for a while after their last job, and on a machine with
    few cores that spinning would be charged to whichever task runs next.
    """
    names = list(tasks)
    for _ in range(warmup):
        for name in names:
            tasks[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            if pause:
                time.sleep(pause)
            start = time.perf_counter()
            own = tasks[name]()
            elapsed = time.perf_counter() - start
            # a task may time itself (to leave an untimed warm-up step out): a float it returns
            # is its time in seconds
            times[name].append(own if isinstance(own, float) else elapsed)
    return times


def calls_for(function: Callable[[], object], seconds: float) -> int:
    """How many calls of ``function`` take about ``seconds`` (at least one)."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            function()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 4 or calls >= 1 << 20:
            return max(1, round(calls * seconds / max(elapsed, 1e-9)))
        calls *= 4


def repeated(function: Callable[[], object], calls: int) -> Callable[[], None]:
    """A task that calls ``function`` ``calls`` times."""

    def task() -> None:
        for _ in range(calls):
            function()

    return task


@dataclasses.dataclass(frozen=True)
class Summary:
    """The median and the range of a few measurements."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Summary:
        values = list(values)
        return cls(statistics.median(values), min(values), max(values))

    def scaled(self, factor: float) -> Summary:
        return Summary(self.median * factor, self.low * factor, self.high * factor)

    def inverted(self, numerator: float = 1.0) -> Summary:
        """``numerator / x`` for each statistic (a time becomes a rate: low and high swap)."""
        return Summary(numerator / self.median, numerator / self.high, numerator / self.low)


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> Summary:
    """The ratio within each round, summarized: in an interleaved run this is steadier than
    a ratio of medians, because both halves of a pair saw the same machine load."""
    return Summary.of(a / b for a, b in zip(numerators, denominators, strict=True))


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual − expected| / max |expected|: a normwise error that tiny entries cannot
    blow up."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        return float("inf")
    scale = float(np.max(np.abs(expected), initial=0.0)) or 1.0
    return float(np.max(np.abs(actual - expected), initial=0.0)) / scale


# --------------------------------------------------------------------------- Markdown
def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; columns after the first are right-aligned."""
    rows = [[str(cell) for cell in row] for row in rows]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join(["---", *["---:"] * (len(headers) - 1)]) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def number(value: float, digits: int = 3) -> str:
    """``value`` with about ``digits`` significant digits, thousands separated."""
    if value == 0 or not np.isfinite(value):
        return str(value)
    decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(value)))))
    return f"{value:,.{decimals}f}"


def spread(summary: Summary, digits: int = 3) -> str:
    return f"{number(summary.low, digits)}–{number(summary.high, digits)}"


def ratio(summary: Summary) -> str:
    return f"{summary.median:.2f}× ({summary.low:.2f}–{summary.high:.2f})"


def verdict(value: float, target: float, higher_is_better: bool = True) -> str:
    met = value >= target if higher_is_better else value <= target
    return "met" if met else "**missed**"


def python_command() -> str:
    """How this process was started, for the report."""
    return " ".join([os.path.basename(sys.executable), *sys.orig_argv[1:]])


def in_subprocess(module: str, job: dict) -> dict:
    """Run ``python -m <module> --worker <job>`` in a fresh process and return the JSON
    dict its last line prints: a library timed alone in its process. PyTorch's worker runs
    with glibc's malloc untouched, as its users get it (``TENSORGRAD_KEEP_MEMORY=0``)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    job = {**job, "threads": blas()[1]}
    if job["kind"] != "tensorgrad":
        env["TENSORGRAD_KEEP_MEMORY"] = "0"
    completed = subprocess.run(
        [sys.executable, "-m", module, "--worker", json.dumps(job)],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"{module} worker {job} failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])
