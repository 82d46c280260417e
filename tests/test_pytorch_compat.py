"""The answers ported PyTorch code asks for: ``tg.cuda``, ``tg.accelerator``, ``tg.backends``,
and the errors for PyTorch features tensorgrad lacks (each names the feature and points at
docs/porting.md)."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tensorgrad as tg


def test_cuda_answers_as_pytorch_without_cuda():
    assert tg.cuda.is_available() is False
    assert tg.cuda.device_count() == 0
    assert tg.cuda.is_initialized() is False
    assert tg.cuda.manual_seed(1) is None and tg.cuda.manual_seed_all(1) is None
    assert tg.cuda.empty_cache() is None
    for call in (tg.cuda.current_device, tg.cuda.synchronize, tg.cuda.get_device_name):
        with pytest.raises(tg.UnsupportedError, match=r"CPU only .*docs/porting.md"):
            call()
    with pytest.raises(tg.UnsupportedError, match=r"torch.cuda.Event is not available"):
        _ = tg.cuda.Event
    assert tg.cuda.amp.GradScaler is tg.amp.GradScaler  # disabled without CUDA: tests/compat
    assert not hasattr(tg.cuda, "Stream")  # an AttributeError too


def test_cuda_seeding_does_not_touch_the_cpu_generator():
    tg.manual_seed(3)
    expected = tg.randn(3).tolist()
    tg.manual_seed(3)
    tg.cuda.manual_seed_all(99)
    assert tg.randn(3).tolist() == expected


def test_accelerator_is_absent():
    assert tg.accelerator.is_available() is False
    assert tg.accelerator.current_accelerator() is None
    assert tg.accelerator.device_count() == 0


def test_backends_switches_are_settable_module_attributes():
    from tensorgrad.backends import cudnn

    assert cudnn is tg.backends.cudnn
    before = (cudnn.deterministic, cudnn.benchmark)
    try:
        cudnn.deterministic, cudnn.benchmark = True, False
        assert tg.backends.cudnn.deterministic is True
    finally:
        cudnn.deterministic, cudnn.benchmark = before
    assert cudnn.is_available() is False and cudnn.version() is None
    assert tg.backends.mps.is_available() is False and tg.backends.mps.is_built() is False
    tg.backends.cuda.matmul.allow_tf32 = True  # settable, ignored
    assert tg.backends.cuda.is_built() is False
    # PyTorch's torch.backends, not the array module tensorgrad runs on
    assert tg.backends is not tg.array_backend and hasattr(tg.array_backend, "xp")


def test_pytorch_import_lines_port():
    for module in ("tensorgrad.cuda", "tensorgrad.accelerator", "tensorgrad.backends.cudnn"):
        importlib.import_module(module)
    namespace: dict = {}
    exec("from tensorgrad.backends import cudnn, mps", namespace)
    assert namespace["cudnn"].benchmark is False


@pytest.mark.parametrize(
    "path, module",
    [
        ("tensorgrad.cuda", "tensorgrad.compat.cuda"),
        ("tensorgrad.accelerator", "tensorgrad.compat.accelerator"),
        ("tensorgrad.backends", "tensorgrad.compat.backends"),
        ("tensorgrad.backends.cudnn", "tensorgrad.compat.backends.cudnn"),
        ("tensorgrad.backends.cuda", "tensorgrad.compat.backends.cuda"),
        ("tensorgrad.backends.mps", "tensorgrad.compat.backends.mps"),
        ("tensorgrad.backends.cpu", "tensorgrad.compat.backends.cpu"),
    ],
)
def test_pytorch_paths_are_the_compat_modules_themselves(path, module):
    # the aliases at PyTorch's paths re-export by being the same module: a switch set through
    # one path is seen through the other, whichever was imported first
    code = (
        f"import importlib, tensorgrad as tg; alias = importlib.import_module({path!r}); "
        f"real = importlib.import_module({module!r}); assert alias is real, (alias, real); "
        f"assert eval({path.replace('tensorgrad', 'tg', 1)!r}) is real"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert importlib.import_module(path) is importlib.import_module(module)


def test_pytorchs_paths_are_there_after_import_tensorgrad_alone():
    """``import tensorgrad`` registers the small compat modules at PyTorch's paths, so that
    ``import torch.backends.cudnn`` ports as written: the same module objects."""
    code = (
        "import sys, tensorgrad; "
        "pairs = [('cuda', 'cuda'), ('accelerator', 'accelerator'), ('backends', 'backends'), "
        "('backends.cudnn', 'backends.cudnn'), ('backends.mps', 'backends.mps')]; "
        "assert all(sys.modules['tensorgrad.' + a] is sys.modules['tensorgrad.compat.' + b] "
        "for a, b in pairs); "
        "import tensorgrad.backends.cudnn as c; "
        "assert c is sys.modules['tensorgrad.compat.backends.cudnn']"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", ["complex64", "complex128", "cfloat", "bfloat16", "chalf"])
def test_missing_dtypes_are_names_a_program_may_hold(name):
    """nanoGPT builds ``{'float32': torch.float32, 'bfloat16': torch.bfloat16, ...}`` before
    it picks float32 on a CPU: the name is there, the tensor is refused."""
    dtype = getattr(tg, name)
    assert dtype is getattr(tg, name) and repr(dtype) == f"torch.{name}"
    assert pickle.loads(pickle.dumps(dtype)) is dtype
    assert {"x": dtype, "y": tg.float32}["x"] is dtype and dtype != tg.float32
    for make in (
        lambda: tg.zeros(2, dtype=dtype),
        lambda: tg.tensor([1.0], dtype=dtype),
        lambda: tg.ones(2).to(dtype),
        lambda: tg.nn.Linear(2, 2, dtype=dtype),
        lambda: tg.nn.Linear(2, 2).to(dtype),
    ):
        with pytest.raises(tg.UnsupportedError, match=rf"torch.{name} is not supported.*porting"):
            make()


def test_the_dtype_placeholders_answer_as_pytorchs():
    assert tg.bfloat16.is_floating_point and not tg.bfloat16.is_complex
    assert tg.complex64.is_complex and not tg.complex64.is_floating_point
    assert tg.cuda.is_bf16_supported() is False


@pytest.mark.parametrize("name", ["compile", "jit", "fft", "linalg", "mps"])
def test_missing_features_are_named(name):
    with pytest.raises(AttributeError, match=rf"torch.{name} \(.*\) is not supported.*porting"):
        getattr(tg, name)


def test_an_unknown_name_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
        _ = tg.no_such_thing


@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.zeros(2, device="cuda"),
        lambda: tg.randn(2, device="cuda:0"),
        lambda: tg.zeros(2).cuda(),
        lambda: tg.zeros(2).to("cuda"),
        lambda: tg.zeros(2).to("mps"),
        lambda: tg.nn.Linear(2, 2).cuda(),
        lambda: tg.nn.Linear(2, 2).to("cuda"),
        lambda: tg.nn.Linear(2, 2, device="cuda"),
        lambda: tg.device("cuda"),
        lambda: tg.tensor([1 + 2j]),
        lambda: tg.zeros(2, dtype="bfloat16"),
        lambda: tg.zeros(2, dtype=np.complex64),
        lambda: tg.from_numpy(np.zeros(2, np.complex128)),
        lambda: tg.zeros(2).to(np.complex64),
    ],
)
def test_unsupported_devices_and_dtypes_point_at_the_porting_guide(call):
    with pytest.raises(TypeError, match="porting.md"):  # UnsupportedError is a TypeError
        call()


def test_chunk_is_a_function_and_a_method():
    """``tg.chunk`` was overwritten by the method spelling and recursed into itself."""
    x = tg.arange(12.0).reshape(3, 4)
    assert [c.shape for c in x.chunk(2)] == [(2, 4), (1, 4)]
    assert [c.shape for c in tg.chunk(x, 2, dim=1)] == [(3, 2), (3, 2)]
