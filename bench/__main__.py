"""``python -m bench``: run the benchmarks and print (or write) a Markdown report."""

from __future__ import annotations

import argparse
import datetime
import importlib
import sys
import time
from collections.abc import Sequence

from bench import SECTIONS, common


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark tensorgrad against hand-written NumPy and PyTorch (Markdown out).",
    )
    parser.add_argument("--quick", action="store_true", help="fewer samples and repeats")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run (default: all of {','.join(SECTIONS)})",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="interleaved repeats (default 15, quick 5; the mlp section: 60, quick 16)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS (and PyTorch) threads (default: what NumPy's BLAS chose, usually all cores)",
    )
    parser.add_argument("--output", metavar="FILE", help="also write the Markdown to FILE")
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # for tests
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(SECTIONS))
    if unknown:
        parser.error(f"--only: unknown section(s) {', '.join(unknown)}; choose from {SECTIONS}")
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    return args


def report(args: argparse.Namespace) -> str:
    """The whole Markdown report; raises ``common.DisagreementError`` rather than time
    implementations that do not agree."""
    started = time.perf_counter()
    parts = [
        "# tensorgrad benchmarks\n",
        f"`{common.python_command()}` on {datetime.date.today().isoformat()}.\n",
        common.machine_section(),
    ]
    for name in args.only:
        module = importlib.import_module(f"bench.{name}")
        parts.append(module.run(args))
        print(f"[bench] {name} done", file=sys.stderr)
    elapsed = time.perf_counter() - started
    parts.append(
        f"*Total time: {elapsed:.0f} s; load average at the end: {common.load_average()}.*\n"
    )
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads is not None:
        common.limit_threads(args.threads)
    try:
        text = report(args)
    except common.DisagreementError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
