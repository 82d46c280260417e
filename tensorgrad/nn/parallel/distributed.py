"""``DistributedDataParallel``: one model per process, gradients averaged across processes
inside ``loss.backward()``, with PyTorch's names, arguments and behaviour.

Each rank runs the same model on its own part of the global batch. At construction, rank 0's
parameters and buffers are copied to every rank, after checking that every rank built the same
model. During backward, a hook on each parameter (``register_post_accumulate_grad_hook``)
copies its gradient, divided by the world size, into its place in a flat bucket; when every
gradient of a bucket is in, the bucket is summed across the ranks with one ``all_reduce``,
and the averages are copied back into the ``.grad`` of its parameters. Buckets hold about
``bucket_cap_mb`` MiB of parameters of one dtype, in reverse order of ``parameters()``, which
is roughly the order backward produces their gradients; they are reduced strictly in order,
so every rank runs the same collectives in the same order. This is PyTorch's design, from
Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training"
(VLDB 2020).

Afterwards every rank holds the gradient of the mean loss over the global batch (the
per-rank losses being means over equal per-rank batches), the optimizers step alike, and the
parameters stay identical on every rank without ever being sent again.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.core.node import Node
from tensorgrad.core.tensor import Tensor
from tensorgrad.distributed import process_group as _process_group
from tensorgrad.grad_mode import is_grad_enabled
from tensorgrad.nn.modules.module import Module

#: PyTorch's default bucket size (MiB), and the smaller first bucket it uses with the default
DEFAULT_BUCKET_CAP_MB = 25
DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_MB = 1024 * 1024
_WHAT = "DistributedDataParallel"


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training over the default process group (call
    ``tensorgrad.distributed.init_process_group()`` first).

    ``ddp(x)`` runs ``module(x)``; ``loss.backward()`` then leaves in every parameter's
    ``.grad`` the average over the ranks. The wrapped model is ``ddp.module``; the wrapper's
    ``state_dict()`` keys start with ``module.`` (save ``ddp.module.state_dict()`` for a
    checkpoint that loads into the bare model, or strip the prefix with
    :func:`consume_prefix_in_state_dict_if_present`).

    Arguments, as PyTorch's:

    * ``bucket_cap_mb``: bucket size in MiB (default 25, with a first bucket of 1 MiB for the
      last parameters, as PyTorch);
    * ``find_unused_parameters``: allow parameters that take no part in the loss (the graph
      of the output is searched after each forward); without it such a model fails at the next
      forward with an error naming them. ``static_graph=True`` allows them as well;
    * ``gradient_as_bucket_view``: leave the gradients as views into the buckets (saves a
      copy and the memory of one set of gradients);
    * ``broadcast_buffers`` (deprecated in PyTorch 2.13) / ``forward_sync_buffers``: copy rank
      0's buffers (BatchNorm statistics) to every rank before each training forward;
      ``broadcast_buffers=False`` also skips buffers at construction;
    * ``init_sync``: check the model and copy rank 0's state at construction (default True);
    * ``device_ids``, ``output_device`` must be None and ``dim`` is unused (CPU processes);
      ``check_reduction`` (deprecated) and ``batched_grad_copy`` are accepted and change
      nothing; ``process_group`` must be None (the default group);
      ``delay_all_reduce_named_params``, ``param_to_hook_all_reduce``, ``mixed_precision``,
      ``device_mesh``, ``bucket_cap_mb_list`` and ``skip_all_reduce_unused_params`` are not
      supported and refused.
    """

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool | None = None,
        init_sync: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
        skip_all_reduce_unused_params: bool = False,
        bucket_cap_mb_list: Any = None,
        batched_grad_copy: bool = False,
        forward_sync_buffers: bool | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"{_WHAT}: module must be a Module, got {type(module).__name__}")
        if device_ids or output_device is not None:
            raise ValueError(
                f"{_WHAT}: device_ids and output_device must be None: tensorgrad runs on the "
                f"CPU (got device_ids={device_ids!r}, output_device={output_device!r})"
            )
        if process_group is not None:
            raise ValueError(f"{_WHAT}: process_group must be None (the default group)")
        unsupported = {
            "delay_all_reduce_named_params": delay_all_reduce_named_params,
            "param_to_hook_all_reduce": param_to_hook_all_reduce,
            "mixed_precision": mixed_precision,
            "device_mesh": device_mesh,
            "bucket_cap_mb_list": bucket_cap_mb_list,
        }
        for name, value in unsupported.items():
            if value is not None:
                raise NotImplementedError(f"{_WHAT}: {name} is not supported by tensorgrad")
        if skip_all_reduce_unused_params:
            raise NotImplementedError(
                f"{_WHAT}: skip_all_reduce_unused_params is not supported by tensorgrad"
            )
        if check_reduction:
            warnings.warn(
                "The `check_reduction` argument in `DistributedDataParallel` module is "
                "deprecated. Please avoid using it.",
                FutureWarning,
                stacklevel=2,
            )
        forward_sync, init_sync_buffers = _buffer_sync(broadcast_buffers, forward_sync_buffers)
        world = _process_group._world(_WHAT, None)  # raises unless init_process_group ran

        ignored = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        named = [(n, p) for n, p in module.named_parameters() if n not in ignored]
        trained = [(n, p) for n, p in named if p.requires_grad]
        if not trained:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any "
                "parameter that requires a gradient."
            )
        buffers = [(n, b) for n, b in module.named_buffers() if n not in ignored]

        self.module = module
        self.dim = dim
        self.device_ids = None
        self.output_device = None
        self.find_unused_parameters = bool(find_unused_parameters)
        self.static_graph = bool(static_graph)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.forward_sync_buffers = forward_sync
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((bucket_cap_mb or DEFAULT_BUCKET_CAP_MB) * _MB)
        first_cap = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        if self.bucket_bytes_cap <= 0:
            raise ValueError(f"{_WHAT}: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        # a plain object: Module does not look inside it for parameters, so the wrapper's
        # parameters are exactly module's, under the name module.<name>
        self._state = _State(world, [t for _, t in buffers])

        if init_sync:
            _verify_same_model(world, named, buffers)
            _broadcast_from_rank0(
                world,
                [p for _, p in named] + ([b for _, b in buffers] if init_sync_buffers else []),
            )
        self.reducer = _Reducer(
            world,
            [p for _, p in trained],
            [n for n, _ in trained],
            (first_cap, self.bucket_bytes_cap),
            find_unused=self.find_unused_parameters or self.static_graph,
            bucket_view=self.gradient_as_bucket_view,
        )

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        state = self._state
        if self.require_forward_param_sync and self.forward_sync_buffers and state.buffers:
            _broadcast_from_rank0(state.world, state.buffers)
        sync = is_grad_enabled() and self.require_backward_grad_sync
        output = self.module(*inputs, **kwargs)
        if sync:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(output)
        else:
            self.require_forward_param_sync = False
        return output

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within this context, backward accumulates gradients locally without averaging
        them; the first backward of a forward run outside it averages everything accumulated.
        The forward must run inside the context too (PyTorch's rule: the forward decides)."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module: Module, names: Any) -> None:
        """Leave these parameters and buffers (by ``named_parameters`` name) out of DDP."""
        module._ddp_params_and_buffers_to_ignore = list(names)


class _State:
    """What the wrapper keeps that Module must not search for parameters."""

    __slots__ = ("buffers", "world")

    def __init__(self, world: Any, buffers: list[Tensor]) -> None:
        self.world = world
        self.buffers = buffers


def _buffer_sync(broadcast_buffers: bool | None, forward_sync_buffers: bool | None) -> tuple:
    """(sync buffers before forward, sync buffers at construction): PyTorch 2.13's rules."""
    if broadcast_buffers is not None:
        if forward_sync_buffers is not None:
            warnings.warn(
                "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                "`broadcast_buffers` is deprecated and its value is ignored when "
                "`forward_sync_buffers` is provided.",
                FutureWarning,
                stacklevel=3,
            )
        else:
            warnings.warn(
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. "
                "IMPORTANT: unlike `broadcast_buffers=False`, `forward_sync_buffers=False` "
                "still syncs buffers at init.",
                FutureWarning,
                stacklevel=3,
            )
    if forward_sync_buffers is not None:
        return bool(forward_sync_buffers), True
    effective = True if broadcast_buffers is None else bool(broadcast_buffers)
    return effective, effective


# --------------------------------------------------------------------- construction
def _describe(kind: str, name: str, tensor: Tensor) -> tuple[str, str, tuple, str]:
    return (kind, name, tuple(tensor.shape), str(tensor.dtype))


def _verify_same_model(world: Any, params: list, buffers: list) -> None:
    """Raise on every rank, with the same message, unless every rank has parameters and
    buffers of the same names, shapes and dtypes, in the same order."""
    mine = [_describe("parameter", n, p) for n, p in params]
    mine += [_describe("buffer", n, b) for n, b in buffers]
    everyone = world.allgather_object(mine, _WHAT)
    reference = everyone[0]
    problems = []
    for rank, theirs in enumerate(everyone[1:], start=1):
        if theirs != reference:
            problems.append(_difference(rank, theirs, reference))
    if problems:
        raise RuntimeError(
            f"{_WHAT}: the model differs across ranks (every rank must build the same model):\n  "
            + "\n  ".join(problems[:8])
            + (f"\n  ... and {len(problems) - 8} more rank(s)" if len(problems) > 8 else "")
        )


def _difference(rank: int, theirs: list, reference: list) -> str:
    """The first difference between rank ``rank``'s model and rank 0's, in words."""

    def show(entry: tuple) -> str:
        kind, name, shape, dtype = entry
        return f"{kind} {name!r} of shape {shape} {dtype}"

    for mine, zero in zip(theirs, reference):
        if mine != zero:
            return f"rank {rank} has {show(mine)} where rank 0 has {show(zero)}"
    if len(theirs) > len(reference):
        who, extra = rank, theirs[len(reference)]
    else:
        who, extra = 0, reference[len(theirs)]
    return (
        f"rank {rank} has {len(theirs)} parameters and buffers, rank 0 has {len(reference)}: "
        f"only rank {who} has {show(extra)}"
    )


def _broadcast_from_rank0(world: Any, tensors: list[Tensor]) -> None:
    """Copy rank 0's values of ``tensors`` to every rank: one broadcast per dtype, of all the
    tensors of that dtype packed into one flat array."""
    if world.size == 1 or not tensors:
        return
    by_dtype: dict[np.dtype, list[Tensor]] = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    for group in by_dtype.values():
        flat = np.concatenate([t._data.reshape(-1) for t in group])
        world.broadcast(flat, 0, _WHAT).wait()
        if world.rank != 0:
            start = 0
            for t in group:
                np.copyto(t._data, flat[start : start + t._data.size].reshape(t.shape))
                start += t._data.size
            mark_changed(group)


# --------------------------------------------------------------------- buckets
def _assign_buckets(sizes: list[int], dtypes: list[Any], limits: tuple[int, ...]) -> list[list]:
    """Group tensor indices into buckets, PyTorch's way: in order, one open bucket per dtype,
    closed once it holds ``limits[k]`` bytes or more (k counting that dtype's closed buckets,
    the last limit repeating); the buckets sorted by their first index."""
    result: list[list[int]] = []
    open_buckets: dict[Any, tuple[list[int], int, int]] = {}
    for index, (size, dtype) in enumerate(zip(sizes, dtypes)):
        indices, total, closed = open_buckets.get(dtype, ([], 0, 0))
        indices.append(index)
        total += size
        if total >= limits[min(closed, len(limits) - 1)]:
            result.append(indices)
            open_buckets[dtype] = ([], 0, closed + 1)
        else:
            open_buckets[dtype] = (indices, total, closed)
    result.extend(indices for indices, _, _ in open_buckets.values() if indices)
    result.sort(key=lambda bucket: bucket[0])
    return result


class _Bucket:
    """A flat array holding the gradients of some parameters, reduced with one collective.
    With unused-parameter detection, one more element per parameter counts the ranks on
    which that parameter got a gradient."""

    __slots__ = ("flags", "flat", "indices", "pending", "views")

    def __init__(self, indices: list[int], params: list[Tensor], flags: bool) -> None:
        self.indices = indices
        sizes = [params[i]._data.size for i in indices]
        total = sum(sizes)
        self.flat = np.zeros(total + (len(indices) if flags else 0), params[indices[0]].dtype)
        self.views = []
        start = 0
        for i, size in zip(indices, sizes):
            self.views.append(self.flat[start : start + size].reshape(params[i].shape))
            start += size
        self.flags = self.flat[total:] if flags else None
        self.pending = len(indices)


def _on_grad_ready(reducer_ref: weakref.ref, index: int, param: Tensor) -> None:
    """The hook on each parameter (it holds the reducer weakly: no reference cycle)."""
    reducer = reducer_ref()
    if reducer is not None:
        reducer.mark_ready(index)


class _Reducer:
    """Averages the gradients of ``params`` across the ranks, bucket by bucket, as backward
    produces them (PyTorch's ``Reducer``)."""

    def __init__(
        self,
        world: Any,
        params: list[Tensor],
        names: list[str],
        limits: tuple[int, ...],
        find_unused: bool,
        bucket_view: bool,
    ) -> None:
        self.world = world
        self.params = params
        self.names = names
        self.find_unused = find_unused
        self.bucket_view = bucket_view
        self.scale = 1.0 / world.size
        assignment = _assign_buckets(
            [p._data.nbytes for p in params], [p.dtype for p in params], limits
        )
        # reversed: the last parameters' gradients are ready first
        self.buckets = [_Bucket(indices, params, find_unused) for indices in reversed(assignment)]
        self.place = {}  # parameter index → (bucket, position in the bucket)
        for bucket in self.buckets:
            for position, index in enumerate(bucket.indices):
                self.place[index] = (bucket, position)
        ref = weakref.ref(self)
        handles = [
            p.register_post_accumulate_grad_hook(functools.partial(_on_grad_ready, ref, i))
            for i, p in enumerate(params)
        ]
        weakref.finalize(self, _remove_hooks, handles)
        self.expecting = False  # a synced forward ran: its backward's hooks do the work
        self.started = False  # some gradient of this iteration has arrived
        self.ready = [False] * len(params)
        self.next_bucket = 0
        self.unused: list[int] = []
        self.unused_marked = False

    # ----------------------------------------------------------------- each iteration
    def prepare_for_backward(self, output: Any) -> None:
        """After a synced forward: check the last iteration finished, and expect gradients."""
        if self.expecting and self.started:
            missing = [self.names[i] for i, ready in enumerate(self.ready) if not ready]
            self.expecting = False
            raise RuntimeError(
                "DistributedDataParallel: Expected to have finished reduction in the prior "
                "iteration before starting a new one: these parameters got no gradient "
                f"in it: {', '.join(missing)}. Pass find_unused_parameters=True to "
                "DistributedDataParallel if some parameters take no part in the loss, and "
                "make sure every output of forward that uses parameters goes into the loss."
            )
        self.expecting = True
        self.started = False
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)
        self.unused_marked = False
        if self.find_unused:
            used = _leaves_reached(output)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in used]

    def mark_ready(self, index: int) -> None:
        """Parameter ``index`` has its gradient (the hook): put it in its bucket, and reduce
        the buckets that are complete, in order."""
        if not self.expecting:
            return  # no synced forward (no_sync, or the module was called directly)
        if not self.unused_marked:
            self.unused_marked = True  # at the first gradient, as PyTorch
            for unused in self.unused:
                self._mark(unused)
        self._mark(index)

    def _mark(self, index: int) -> None:
        if self.ready[index]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[index]!r} got a gradient twice "
                "in one iteration (Expected to mark a variable ready only once): two backward "
                "passes through one forward, or a parameter used again after its gradient was "
                "reduced. Run a new forward before each backward."
            )
        self.ready[index] = True
        self.started = True
        bucket, position = self.place[index]
        view = bucket.views[position]
        param = self.params[index]
        grad = grad_array(param) if param._grad is not None else None
        if grad is not None and (grad.dtype != view.dtype or grad.shape != view.shape):
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[index]!r} now has a gradient "
                f"of shape {grad.shape} {grad.dtype}, but was {view.shape} {view.dtype} when "
                "the wrapper was made; cast or reshape the model before wrapping it"
            )
        if grad is None:
            view.fill(0)
        elif np.may_share_memory(grad, view):  # a bucket view already
            np.multiply(view, self.scale, out=view)
        else:
            np.multiply(grad, self.scale, out=view)  # PyTorch divides before summing, too
        if bucket.flags is not None:
            bucket.flags[position] = grad is not None
        bucket.pending -= 1
        if bucket.pending == 0:
            self._reduce_ready_buckets()

    def _reduce_ready_buckets(self) -> None:
        buckets = self.buckets
        while self.next_bucket < len(buckets) and buckets[self.next_bucket].pending == 0:
            bucket = buckets[self.next_bucket]
            self.next_bucket += 1
            self.world.allreduce(bucket.flat, "sum", _WHAT).wait()
            self._copy_back(bucket)
        if self.next_bucket == len(buckets):
            self.expecting = False  # this iteration is done

    def _copy_back(self, bucket: _Bucket) -> None:
        for position, index in enumerate(bucket.indices):
            if bucket.flags is not None and bucket.flags[position] == 0:
                continue  # no rank has a gradient for it: .grad stays as it is (None)
            param, view = self.params[index], bucket.views[position]
            grad = grad_array(param) if param._grad is not None else None
            if self.bucket_view:
                if grad is None or not np.may_share_memory(grad, view):
                    param.grad = view
            elif grad is None or not grad.flags.writeable:
                param.grad = view.copy()
            else:
                np.copyto(grad, view)


def _remove_hooks(handles: list) -> None:
    for handle in handles:
        handle.remove()


def _leaves_reached(output: Any) -> set[int]:
    """The ids of the leaf tensors that the tensors in ``output`` (nested in lists, tuples
    and dicts) were computed from: the parameters that backward from it will reach."""
    found: set[int] = set()
    stack, seen = [output], set()
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            if item.grad_fn is None:
                found.add(id(item))
            else:
                stack.append(item.grad_fn)
        elif isinstance(item, Node):  # a node: its parents are nodes and leaf tensors
            if id(item) not in seen and item.parents is not None:
                seen.add(id(item))
                stack.extend(p for p in item.parents if p is not None)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that have it, in place: load a
    checkpoint of ``DistributedDataParallel`` (keys ``module.…``) into the bare model with
    ``consume_prefix_in_state_dict_if_present(sd, "module.")`` (PyTorch's function, from
    ``torch.nn.modules.utils``)."""
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix) :]] = state_dict.pop(key)
