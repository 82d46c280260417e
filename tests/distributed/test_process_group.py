"""``tensorgrad.distributed`` in one process, without mpiexec: how ``init_process_group``
chooses its world, the world of one, and every error of the API (by type and message)."""

from __future__ import annotations

import datetime
import subprocess
import sys

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.distributed as dist
from tensorgrad.distributed import launcher, process_group

NOT_INITIALIZED = "Default process group has not been initialized"


def test_importing_tensorgrad_and_a_world_of_one_never_import_mpi():
    code = (
        "import sys, tensorgrad, tensorgrad.distributed as dist, tensorgrad.nn.parallel, "
        "tensorgrad.data\n"
        "dist.init_process_group()\n"
        "assert dist.get_world_size() == 1 and dist.get_backend() == 'local'\n"
        "dist.destroy_process_group()\n"
        "print(sorted(m for m in sys.modules if m.startswith('mpi4py')))\n"
    )
    env = {"PATH": "/usr/bin:/bin"}  # no launcher variables
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_before_init_the_group_functions_raise_pytorchs_error():
    assert dist.is_available()
    assert not dist.is_initialized()
    for function in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(ValueError, match=NOT_INITIALIZED):
            function()
    with pytest.raises(ValueError, match=NOT_INITIALIZED):
        dist.all_reduce(tg.ones(2))
    with pytest.raises(ValueError, match=f"destroy_process_group: {NOT_INITIALIZED}"):
        dist.destroy_process_group()


def test_without_a_launcher_init_makes_a_world_of_one():
    dist.init_process_group()
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "local")
    with pytest.raises(ValueError, match="trying to initialize the default process group twice"):
        dist.init_process_group()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group(backend="mpi", init_method="env://", world_size=1, rank=0)
    assert dist.get_world_size() == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"backend": "gloo"}, ValueError, "backend 'gloo' is not available; tensorgrad's only"),
        ({"init_method": "tcp://10.0.0.1:23456"}, ValueError, "init_method='tcp://10.0.0.1"),
        ({"store": object()}, ValueError, "store must be None with the mpi backend"),
        ({"device_id": 0}, ValueError, "device_id must be None"),
        ({"world_size": 2}, ValueError, "world_size=2, but the launcher started 1 process"),
        ({"rank": 1}, ValueError, "rank=1, but the launcher made this process rank 0"),
        ({"timeout": 30}, TypeError, "timeout must be a datetime.timedelta, got int"),
        ({"timeout": datetime.timedelta(0)}, ValueError, "timeout must be positive"),
    ],
)
def test_bad_arguments_are_refused_and_leave_no_group(kwargs, error, message):
    with pytest.raises(error, match=message):
        dist.init_process_group(**kwargs)
    assert not dist.is_initialized()


def test_a_launcher_with_several_processes_needs_mpi4py(monkeypatch):
    monkeypatch.setattr(process_group, "is_mpi_available", lambda: False)
    monkeypatch.setenv("PMI_SIZE", "4")
    monkeypatch.setenv("PMI_RANK", "2")
    with pytest.raises(RuntimeError) as info:
        dist.init_process_group()
    assert "mpiexec (MPICH, Intel MPI) started this process as one of 4" in str(info.value)
    assert "pip install 'tensorgrad[distributed]'" in str(info.value)
    assert not dist.is_initialized()
    # a launcher's world of one needs no MPI; TENSORGRAD_DISTRIBUTED=local overrides any
    monkeypatch.setenv("PMI_SIZE", "1")
    monkeypatch.setenv("PMI_RANK", "0")
    dist.init_process_group()
    assert dist.get_backend() == "local"
    dist.destroy_process_group()
    monkeypatch.setenv("PMI_SIZE", "4")
    monkeypatch.setenv(launcher.BACKEND_VARIABLE, "local")
    dist.init_process_group()
    assert dist.get_world_size() == 1


def test_launcher_detection():
    assert launcher.detect({}) is None
    assert launcher.detect({"PMI_SIZE": "3", "PMI_RANK": "1"}) == launcher.Launch(
        "mpiexec (MPICH, Intel MPI)", 3, 1
    )
    assert launcher.detect({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"}).size == 2
    assert launcher.detect({"SLURM_STEP_NUM_TASKS": "8", "SLURM_PROCID": "5"}).rank == 5
    assert launcher.detect({"PMIX_RANK": "3"}) == launcher.Launch("a PMIx launcher", None, 3)
    with pytest.raises(RuntimeError, match="PMI_SIZE='four' is not an integer"):
        launcher.detect({"PMI_SIZE": "four"})
    assert launcher.forced_backend({launcher.BACKEND_VARIABLE: "MPI"}) == "mpi"
    assert launcher.forced_backend({launcher.BACKEND_VARIABLE: "auto"}) is None
    with pytest.raises(RuntimeError, match="TENSORGRAD_DISTRIBUTED='nccl': expected"):
        launcher.forced_backend({launcher.BACKEND_VARIABLE: "nccl"})


# --------------------------------------------------------------------------- collectives
@pytest.fixture
def one() -> None:
    dist.init_process_group()


@pytest.mark.parametrize("op", list(dist.ReduceOp))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_all_reduce_over_one_rank_keeps_the_values(one, op, dtype):
    values = np.array([[1, 0, 3]]).astype(dtype)
    tensor = tg.tensor(values.copy())
    defined = (dtype.startswith("float") and op.name not in ("BAND", "BOR", "BXOR")) or (
        not dtype.startswith("float") and op is not dist.ReduceOp.AVG
    )
    if not defined:
        with pytest.raises(RuntimeError, match=f"ReduceOp.{op.name} is not defined for {dtype}"):
            dist.all_reduce(tensor, op=op)
        return
    before = tensor._version
    assert dist.all_reduce(tensor, op=op) is None
    np.testing.assert_array_equal(tensor.numpy(), values)
    assert tensor.dtype == values.dtype
    assert tensor._version > before  # an in-place change, as far as autograd knows


def test_collectives_change_tensors_in_place_for_autograd(one):
    w = tg.tensor([1.0, 2.0], requires_grad=True)  # a leaf that requires grad: allowed
    y = (w * w).sum()
    dist.all_reduce(w)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_broadcast_all_gather_barrier_and_objects_over_one_rank(one):
    t = tg.tensor([1.0, 2.0])
    dist.broadcast(t, src=0)
    dist.broadcast(t, group_src=0)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    out = [tg.zeros(2)]
    dist.all_gather(out, t)
    np.testing.assert_array_equal(out[0].numpy(), [1.0, 2.0])
    assert dist.barrier() is None
    work = dist.all_reduce(t, async_op=True)
    assert work.is_completed() and work.wait() is True
    objects = [None]
    payload = {"a": [1, 2]}
    dist.all_gather_object(objects, payload)
    assert objects == [payload] and objects[0] is not payload
    listed = ["x", 3]
    dist.broadcast_object_list(listed, src=0)
    assert listed == ["x", 3]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: dist.all_reduce(np.ones(2)), TypeError, "tensor must be a tensorgrad Tensor"),
        (lambda: dist.all_reduce(tg.ones(2), op="sum"), TypeError, "op must be a ReduceOp"),
        (
            lambda: dist.all_reduce(tg.Tensor(np.broadcast_to(np.ones(1), (3,)))),
            ValueError,
            "all_reduce: tensor is read-only",
        ),
        (lambda: dist.all_reduce(tg.ones(2), group=object()), ValueError, "one process group"),
        (lambda: dist.broadcast(tg.ones(2), src=1), ValueError, "src=1 is not a rank"),
        (lambda: dist.broadcast(tg.ones(2)), ValueError, "Must specify global_rank or group_rank"),
        (
            lambda: dist.broadcast(tg.ones(2), src=0, group_src=0),
            ValueError,
            "Can't specify both",
        ),
        (
            lambda: dist.all_gather([tg.ones(2), tg.ones(2)], tg.ones(2)),
            ValueError,
            r"one tensor per rank \(1\), got 2",
        ),
        (
            lambda: dist.all_gather([tg.ones(2, dtype="float64")], tg.ones(2)),
            RuntimeError,
            "different dtypes: float32, float64",
        ),
        (
            lambda: dist.all_gather([tg.ones(3)], tg.ones(2)),
            ValueError,
            r"tensor has 2 elements but tensor_list\[0\]",
        ),
        (lambda: dist.barrier(device_ids=[0]), ValueError, "device_ids must be None"),
        (lambda: dist.all_gather_object([], 1), ValueError, "one place per rank"),
    ],
)
def test_collective_errors(one, call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_all_gather_into_noncontiguous_outputs_and_of_a_noncontiguous_input(one):
    source = tg.tensor(np.arange(6.0).reshape(2, 3)).T
    out = [tg.Tensor(np.zeros((2, 3)).T)]  # a transposed, non-contiguous array
    assert not out[0].numpy().flags.c_contiguous
    dist.all_gather(out, source)
    np.testing.assert_array_equal(out[0].numpy(), source.numpy())


def test_mpi_can_be_forced_without_a_launcher():
    """TENSORGRAD_DISTRIBUTED=mpi: MPI's singleton start, a world of one on the mpi backend,
    whose collectives and exit (without destroy_process_group) work."""
    pytest.importorskip("mpi4py")
    code = (
        "import tensorgrad as tg, tensorgrad.distributed as dist\n"
        "dist.init_process_group()\n"
        "t = tg.tensor([1.0, 2.0])\n"
        "dist.all_reduce(t, op=dist.ReduceOp.AVG)\n"
        "print(dist.get_backend(), dist.get_world_size(), t.tolist())\n"
    )
    env = {"PATH": "/usr/bin:/bin", launcher.BACKEND_VARIABLE: "mpi"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "mpi 1 [1.0, 2.0]"
