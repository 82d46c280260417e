"""The optional extras for moving models out (safetensors, onnx, tensorboard) and the JIT's
numba stay optional: ``import tensorgrad`` imports none of them, nor the modules that use
them, and each of those modules loads on first use."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("safetensors", "onnx", "onnxruntime", "tensorboard", "google.protobuf", "numba")
OURS = ("tensorgrad.safetensors", "tensorgrad.onnx", "tensorgrad.utils")


def test_import_tensorgrad_imports_no_extra():
    code = (
        "import sys, tensorgrad as tg\n"
        f"loaded = [n for n in {HEAVY + OURS!r} if n in sys.modules]\n"
        "assert not loaded, loaded\n"
        "tg.nn.Linear(2, 2); import tensorgrad.training\n"  # nor the layers or the trainer
        f"loaded = [n for n in {HEAVY!r} if n in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_modules_load_on_first_use_without_their_packages():
    """Importing tensorgrad's modules needs none of the packages: a missing one is named when
    it is first needed (the tests of each module check that message)."""
    code = (
        "import sys\n"
        f"for name in {HEAVY!r}: sys.modules[name] = None\n"  # as if not installed
        "import tensorgrad as tg\n"
        "from tensorgrad import onnx, safetensors\n"
        "from tensorgrad.utils import tensorboard\n"
        "assert tg.onnx is onnx and tg.safetensors is safetensors\n"
        "assert tg.utils.tensorboard is tensorboard\n"
        "try:\n"
        "    safetensors.save_file({}, 'x.safetensors')\n"
        "except ImportError as exc:\n"
        '    assert "tensorgrad[safetensors]" in str(exc), exc\n'
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
