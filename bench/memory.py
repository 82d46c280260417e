"""Memory: the peak over a training epoch, and whether memory stays flat step after step.

Each measurement runs in a fresh Python process (``python -m bench.memory --worker ...``), so
one implementation's peak cannot hide inside another's. A worker loads the data and builds
the model, resets the kernel's high-water mark (``/proc/self/clear_refs``), trains, and
reports the high-water mark (``VmHWM``) next to the resident size before training.

The flat-memory check trains tensorgrad for many steps and compares the resident size and
the number of live Tensor and Op objects early and at the end: a graph kept alive by a
reference cycle, or a cache that grows, shows up as growth.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from bench import common, mlp

MiB = 1024 * 1024
#: how much the resident size, and the number of objects the collector tracks, may grow
#: between the early and the final reading (Tensors and Ops may not grow at all)
FLAT_TOLERANCE = 4 * MiB
FLAT_OBJECTS = 100
PEAK_TARGET = 1.5
BATCH = 128


def _status(field: str) -> int | None:
    """A ``/proc/self/status`` size in bytes, or None where there is no such file."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def resident() -> int | None:
    return _status("VmRSS")


def peak() -> int:
    """The peak resident size since the process started or since :func:`reset_peak`."""
    value = _status("VmHWM")
    if value is None:  # not Linux: ru_maxrss is kB on Linux and BSD, bytes on macOS
        scale = 1 if sys.platform == "darwin" else 1024
        value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    return value


def reset_peak() -> bool:
    """Start the peak afresh (Linux ≥ 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def live_objects() -> dict[str, int]:
    """How many Tensor and Op objects exist, found among the objects the collector tracks
    (``objects``: all of those).

    Op is an abstract base class, and ``isinstance`` against one caches every type it is asked
    about: the first count would grow the heap it is measuring. Walking each type's MRO does
    not.
    """
    from tensorgrad import ops
    from tensorgrad.core.tensor import Tensor

    tracked = gc.get_objects()
    counts = {"tensors": 0, "ops": 0, "objects": len(tracked)}
    for obj in tracked:
        mro = type(obj).__mro__
        if Tensor in mro:
            counts["tensors"] += 1
        elif ops.Op in mro:
            counts["ops"] += 1
    return counts


# --------------------------------------------------------------------------- worker side
IMPLEMENTATIONS = {
    "numpy": mlp.NumpyMLP,
    "tensorgrad": mlp.TensorgradMLP,
    "torch": mlp.TorchMLP,
}


def _training_setup(kind: str, samples: int):
    x, y, _ = mlp.load_data(samples)
    impl = IMPLEMENTATIONS[kind](mlp.init_params())
    data = [(impl.convert(bx), impl.convert(by)) for bx, by in mlp.batches(x, y, BATCH)]
    del x, y
    return impl, data


def epoch_worker(kind: str, samples: int) -> dict:
    """One epoch; the resident size before it and the peak during it."""
    impl, data = _training_setup(kind, samples)
    gc.collect()
    before = resident()
    reset = reset_peak()
    for x, y in data:
        impl.train_step(x, y)
    return {"before": before, "peak": peak(), "peak_reset": reset}


def flat_worker(samples: int, steps: int, early: int) -> dict:
    """Train tensorgrad ``steps`` steps; RSS and live objects after ``early`` and at the end."""
    impl, data = _training_setup("tensorgrad", samples)
    readings = {}
    for step in range(1, steps + 1):
        impl.train_step(*data[step % len(data)])
        if step in (early, steps):
            readings[step] = {"rss": resident(), **live_objects()}
    return {"early": readings[early], "late": readings[steps]}


def worker_main(argv: list[str]) -> None:
    job = json.loads(argv[0])
    common.limit_threads(job["threads"])
    if job["kind"] == "flat":
        result = flat_worker(job["samples"], job["steps"], job["early"])
    else:
        result = epoch_worker(job["kind"], job["samples"])
    print(json.dumps(result))


# --------------------------------------------------------------------------- parent side
def in_subprocess(job: dict) -> dict:
    """Run one worker job in a fresh interpreter and return what it reports."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    job = {**job, "threads": common.blas()[1]}
    completed = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--worker", json.dumps(job)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"memory worker {job} failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _mib(value: float | None) -> str:
    return "n/a" if value is None else common.number(value / MiB)


def _epoch_table(samples: int) -> str:
    kinds = ["numpy", "tensorgrad"] + (["torch"] if common.torch() is not None else [])
    results = {kind: in_subprocess({"kind": kind, "samples": samples}) for kind in kinds}
    reference = results["numpy"]
    ref_growth = reference["peak"] - (reference["before"] or 0)
    rows = []
    for kind in kinds:
        r = results[kind]
        growth = r["peak"] - (r["before"] or 0)
        peak_ratio = r["peak"] / reference["peak"]
        growth_ratio = growth / ref_growth if ref_growth > 0 else float("nan")
        goal = ""
        if kind == "tensorgrad":
            goal = f"≤{PEAK_TARGET:g}× {common.verdict(peak_ratio, PEAK_TARGET, False)}"
        rows.append([
            IMPLEMENTATIONS[kind].name, _mib(r["before"]), _mib(r["peak"]), _mib(growth),
            f"{peak_ratio:.2f}×", f"{growth_ratio:.2f}×", goal,
        ])  # fmt: skip
    headers = [
        "implementation", "RSS before (MiB)", "peak (MiB)", "growth (MiB)", "peak × NumPy",
        "growth × NumPy", "target (peak)",
    ]  # fmt: skip
    if all(r["peak_reset"] for r in results.values()):
        return common.table(headers, rows)
    note = "*The kernel's peak could not be reset: the peaks include loading the data.*\n"
    return common.table(headers, rows) + "\n" + note


def _flat_table(samples: int, steps: int, early: int) -> str:
    r = in_subprocess({"kind": "flat", "samples": samples, "steps": steps, "early": early})
    early_r, late_r = r["early"], r["late"]
    rss_growth = (late_r["rss"] or 0) - (early_r["rss"] or 0)
    object_growth = late_r["objects"] - early_r["objects"]
    flat = (
        rss_growth <= FLAT_TOLERANCE
        and object_growth <= FLAT_OBJECTS
        and late_r["tensors"] <= early_r["tensors"]
        and late_r["ops"] <= early_r["ops"]
    )
    rows = [
        [f"after step {step}", _mib(x["rss"]), x["tensors"], x["ops"], f"{x['objects']:,}"]
        for step, x in ((early, early_r), (steps, late_r))
    ]
    verdict = "flat" if flat else "**growing**"
    detail = (
        f"RSS {rss_growth / MiB:+.2f} MiB, allowed +{_mib(FLAT_TOLERANCE)} MiB; tracked objects "
        f"{object_growth:+,}, allowed +{FLAT_OBJECTS}"
    )
    return (
        common.table(
            ["tensorgrad training", "RSS (MiB)", "live Tensors", "live Ops", "tracked objects"],
            rows,
        )
        + f"\nMemory over {steps} steps: {verdict} ({detail}; live Tensors and Ops may not grow).\n"
    )


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    samples = config.pick(full=60_000, quick=16_384, smoke=1_024)
    steps, early = config.pick(full=(1000, 100), quick=(1000, 100), smoke=(30, 10))
    _, _, source = mlp.load_data(BATCH)
    return "\n".join(
        [
            "## Memory\n",
            f"**Peak resident memory over one training epoch** ({samples:,} samples, batch "
            f"{BATCH}, {source}), each implementation in its own process. *RSS before* includes "
            "the interpreter, the libraries, the data and the model; *growth* is what training "
            "adds on top.\n",
            _epoch_table(samples),
            f"**Flat over {steps} steps** (tensorgrad, batch {BATCH}, no `gc.collect()` "
            "between readings).\n",
            _flat_table(min(samples, 8192), steps, early),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="bench.memory worker (used by python -m bench)")
    parser.add_argument("--worker", nargs=1, required=True, help="a JSON job")
    worker_main(parser.parse_args().worker)
