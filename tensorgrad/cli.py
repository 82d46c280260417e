"""The ``tensorgrad`` command: ``train``, ``evaluate``, ``export`` and ``explain``.

Each sub-command lives in its own module, which exposes ``register(subparsers)``: it adds its
parser and sets ``func(args) -> int`` as the parser's default. Modules are imported only when
the command line is parsed, so ``import tensorgrad`` stays light.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_MODULES = ("tensorgrad.training", "tensorgrad.training.export", "tensorgrad.explain")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tensorgrad",
        description="A small tensor autograd framework: train, evaluate, export, explain.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt as exc:  # Ctrl-C, or a second SIGINT/SIGTERM during a run
        print(f"interrupted{f': {exc}' if str(exc) else ''}", file=sys.stderr)
        return int(getattr(exc, "exit_status", 130))


if __name__ == "__main__":
    sys.exit(main())
