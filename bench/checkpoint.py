"""Checkpoints: ``tg.save`` and ``tg.load`` of a state dict of float32 matrices (a GPT's worth
of weights, in PyTorch's file format), against ``torch.save`` and ``torch.load`` of the same
tensors where PyTorch is installed.

``tg.save`` pickles with the pure-Python pickler (so that it can name PyTorch's functions
without importing them), syncs the file to disk and renames it into place (atomic), which
``torch.save`` does not; ``tg.load`` checks every entry's CRC-32 as it reads. Both read the
other's files: the rows say which file is read by which library. Before timing, both loads
are checked to give the same values.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from bench import common


def run(args: argparse.Namespace) -> str:
    import tensorgrad as tg

    config = common.settings(args)
    count = config.pick(full=96, quick=24, smoke=2)
    side = config.pick(full=512, quick=512, smoke=8)
    rng = np.random.default_rng(0)
    weights = {f"h.{i}.weight": rng.standard_normal((side, side), dtype=np.float32)
               for i in range(count)}  # fmt: skip
    ours = {name: tg.tensor(array) for name, array in weights.items()}
    megabytes = sum(array.nbytes for array in weights.values()) / 1e6
    torch = common.torch()
    with tempfile.TemporaryDirectory() as directory:
        tg_file, torch_file = os.path.join(directory, "tg.pt"), os.path.join(directory, "torch.pt")
        tasks = {
            "tg.save": lambda: tg.save(ours, tg_file),
            "tg.load": lambda: tg.load(tg_file),
            "tg.load(mmap=True)": lambda: tg.load(tg_file, mmap=True),
        }
        tg.save(ours, tg_file)
        if torch is not None:
            theirs = {name: torch.from_numpy(array) for name, array in weights.items()}
            torch.save(theirs, torch_file)
            for name, value in tg.load(torch_file).items():
                if not np.array_equal(value.numpy(), weights[name]):
                    raise common.DisagreementError(f"checkpoint: tg.load of torch.save: {name}")
            for name, value in torch.load(tg_file, weights_only=True).items():
                if not np.array_equal(value.numpy(), weights[name]):
                    raise common.DisagreementError(f"checkpoint: torch.load of tg.save: {name}")
            tasks |= {
                "torch.save": lambda: torch.save(theirs, torch_file),
                "torch.load (of torch.save's file)": lambda: torch.load(torch_file),
                "tg.load (of torch.save's file)": lambda: tg.load(torch_file),
                "torch.load (of tg.save's file)": lambda: torch.load(tg_file, weights_only=True),
            }
        times = common.interleaved(tasks, config.repeats, warmup=config.warmup, pause=config.pause)
    rows = []
    for name, seconds in times.items():
        summary = common.Summary.of(seconds)
        rows.append([name, common.number(summary.median * 1e3), common.spread(summary.scaled(1e3)),
                     common.number(megabytes / summary.median)])  # fmt: skip
    note = "" if torch is not None else "PyTorch is not installed: tensorgrad's rows only.\n"
    return "\n".join(
        [
            "## Checkpoints\n",
            f"A state dict of {count} float32 matrices of {side}×{side} ({megabytes:.1f} MB) "
            f"saved and loaded, median and range of {config.repeats} interleaved repeats "
            "(the file is in the page cache: this is the libraries' cost, not the disk's).\n",
            common.table(["", "ms", "range", "MB/s"], rows),
            note,
        ]
    )
