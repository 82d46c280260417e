"""tensorgrad's worker threads: the convolution and pooling ops' one speed trick that is
about cores rather than memory.

Why: NumPy releases the GIL while it copies, adds or multiplies plain numbers, so threads
that each take a share of a batch run at once on the cores. The convolution ops cut the
batch into cache-sized chunks (``ops/im2col.py``), and a chunk's im2col, matrix products and
scatter-add run one after the other in one thread while the other threads do the same for
other chunks, each taking the next chunk when it is done (:func:`over_chunks`). The matrix
products in those threads must not each start BLAS's own thread pool (on two cores four busy
threads were several times slower than two), so BLAS is held to one thread while they run
(:class:`tensorgrad._native.openblas.OneThread`). Where that BLAS is not found (NumPy built
against another), the chunks run in the calling thread instead.

One pool at a time: while tensorgrad's threads are in use, the matrix products of the
linear layers (:func:`matmul`) and the optimizers' updates (``_native/axpy.py``) run on them
too, with BLAS held to one thread (:func:`own_threads_active` says why); a network without
convolutions or pooling leaves its products to BLAS's threads, as hand-written NumPy does.

Off-switch: ``TENSORGRAD_THREADS=N`` in the environment (or ``threads.THREADS = N``, or
``tg.set_num_threads(N)``) sets how many threads share the work (default: the cores this
process may run on); 1 runs everything in the calling thread, with BLAS left as it is. The
tests run both ways.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from tensorgrad._native import openblas


def _default_threads() -> int:
    setting = os.environ.get("TENSORGRAD_THREADS", "")
    if setting:
        try:
            return max(1, int(setting))
        except ValueError:
            raise ValueError(
                f"TENSORGRAD_THREADS must be a positive integer, got {setting!r}"
            ) from None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores


#: how many threads share a batch (1: everything in the calling thread)
THREADS: int = _default_threads()
#: work of fewer elements than this stays in the calling thread: handing it to another
#: thread costs some tens of microseconds
MIN_ELEMENTS: int = 1 << 16


def set_num_threads(threads: int) -> None:
    """PyTorch's ``torch.set_num_threads``: how many threads tensorgrad's work is shared
    among (:data:`THREADS`), and NumPy's BLAS with them, where it can be told."""
    global THREADS
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {threads!r}")
    THREADS = threads
    openblas.set_threads(threads)


def get_num_threads() -> int:
    """PyTorch's ``torch.get_num_threads``: :data:`THREADS`."""
    return THREADS


_lock = threading.Lock()
_pool: Any = None
_pool_pid = 0
_pool_workers = 0


def _executor() -> Any:
    """The worker threads, made on first use, and again in a forked child (which has none)
    or when :data:`THREADS` has changed since (``set_num_threads``)."""
    global _pool, _pool_pid, _pool_workers
    workers = max(1, THREADS - 1)
    with _lock:
        if _pool is None or _pool_pid != os.getpid() or _pool_workers != workers:
            from concurrent.futures import ThreadPoolExecutor

            if _pool is not None and _pool_pid == os.getpid():
                _pool.shutdown(wait=False)  # its threads finish what they hold, then end
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tg")
            _pool_pid, _pool_workers = os.getpid(), workers
        return _pool


# --------------------------------------------------------------------------- splitting
#: ``time.monotonic()`` when work was last split over tensorgrad's threads (0: never)
_last_shared = 0.0
#: for this many seconds after that, matrix products and optimizer updates run on
#: tensorgrad's threads too (:func:`own_threads_active`)
ACTIVE_SECONDS: float = 1.0


def split_batch(
    function: Callable[[int, int], Any],
    batch: int,
    elements: int,
    blas: bool = False,
    mark: bool = True,
) -> list[Any]:
    """``[function(start, stop), ...]`` over shares of ``range(batch)`` that together cover
    it in order, run at once in ``THREADS`` threads (the last share in the calling thread).

    ``elements`` (the work's size) below :data:`MIN_ELEMENTS` keeps it to one call on the
    whole batch, as does ``THREADS == 1``. ``blas=True`` says ``function`` multiplies
    matrices: then BLAS runs one thread per share, or the work stays in one call when BLAS
    cannot be told so. ``function`` must write only to what its share owns. A split marks
    tensorgrad's threads as in use (:func:`own_threads_active`), unless ``mark`` is False
    (the work that follows them, products and updates, does not keep them in use).
    """
    global _last_shared
    threads = min(THREADS, batch)
    if threads < 2 or elements < MIN_ELEMENTS:
        return [function(0, batch)]
    bounds = [batch * k // threads for k in range(threads + 1)]
    with openblas.OneThread() if blas else contextlib.nullcontext(True) as alone:
        if not alone:
            return [function(0, batch)]
        pool = _executor()
        shares = list(itertools.pairwise(bounds))
        futures = [pool.submit(function, lo, hi) for lo, hi in shares[:-1]]
        try:
            last = function(*shares[-1])
        finally:
            results = [future.result() for future in futures]  # a worker's error, raised here
    if mark:
        _last_shared = time.monotonic()
    return [*results, last]


def over_chunks(
    work: Callable[[Iterator[tuple[int, int, int]]], Any],
    batch: int,
    step: int,
    elements: int,
    blas: bool = False,
) -> None:
    """``work(chunks)`` in each of ``THREADS`` threads at once, where ``chunks`` yields the
    ``(k, lo, hi)`` of chunks of ``range(batch)``, ``step`` samples each (the k-th chunk:
    ``lo = k·step``), each to the first thread ready for it: a thread the machine slows
    down takes fewer chunks instead of holding the others up at the end.

    ``work`` must write only to what its chunks own; a sum over chunks goes to a slot per
    chunk (index ``k``), summed in chunk order afterwards, so that results do not depend on
    which thread took which chunk, nor on how many threads there are. ``elements`` and
    ``blas`` as for :func:`split_batch`.
    """
    chunks = -(-batch // step) if batch else 0
    counter = itertools.count()  # its next() is atomic: the GIL holds during the call

    def claims() -> Iterator[tuple[int, int, int]]:
        for k in counter:
            if k >= chunks:
                return
            yield k, k * step, min(k * step + step, batch)

    split_batch(lambda start, stop: work(claims()), max(1, min(THREADS, chunks)), elements, blas)


def own_threads_active() -> bool:
    """Whether tensorgrad's threads shared work in the last :data:`ACTIVE_SECONDS`: then
    the work that would otherwise go to BLAS's threads goes to them too.

    Why: one pool of threads at a time. An OpenBLAS thread that has worked keeps spinning
    for a while (~0.1 s) before it sleeps, so a product multiplied on BLAS's threads leaves
    one spinning through whatever runs next; when that is a convolution split over
    tensorgrad's threads, three busy threads share two cores and the convolution takes up
    to twice as long (measured on the CNN step of ``bench/cnn.py``). A network without
    convolutions or pooling never starts tensorgrad's threads, and its products run on
    BLAS's, as hand-written NumPy's do (faster there: BLAS's spinning threads pick up the
    next product at once).
    """
    return THREADS > 1 and time.monotonic() - _last_shared < ACTIVE_SECONDS


def over_batch(
    function: Callable[..., Any], arrays: Sequence[np.ndarray], chunk_elements: int = 0
) -> None:
    """``function(*arrays)`` (copies, adds, masks: work on the arrays' elements in place),
    with the arrays cut along their first axis into shares run at once by
    :func:`split_batch`, and each share into chunks of about ``chunk_elements`` elements of
    the first array (0: no chunks), so that a function making several passes finds its
    chunk still in cache on the second. Arrays of Python objects stay whole: their work
    holds the GIL."""
    first = arrays[0]
    size = 0 if first.dtype == object else first.size
    batch = len(first)
    per_sample = first.size // batch if batch else 0
    step = max(1, chunk_elements // per_sample) if chunk_elements and per_sample else batch

    def share(start: int, stop: int) -> None:
        for lo in range(start, stop, max(step, 1)):
            hi = min(lo + step, stop)
            function(*[a[lo:hi] for a in arrays])

    split_batch(share, batch, size)


# --------------------------------------------------------------------------- matrix products
#: products of fewer multiply-adds than this run in one call: handing half of one to the
#: other thread costs some tens of microseconds
MIN_PRODUCT: int = 1 << 22
_BLAS_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def matmul(a: Any, b: Any) -> Any:
    """``a @ b``; while tensorgrad's threads are in use (:func:`own_threads_active`), a
    product of 2-D float arrays runs with BLAS held to one thread, split by rows (or
    columns) over tensorgrad's threads when it is big. Anything else is ``a @ b``."""
    if (
        type(a) is not np.ndarray
        or type(b) is not np.ndarray
        or a.ndim != 2
        or b.ndim != 2
        or a.shape[1] != b.shape[0]
        or a.dtype not in _BLAS_TYPES
        or b.dtype not in _BLAS_TYPES
        or not own_threads_active()
    ):
        return a @ b
    (m, k), n = a.shape, b.shape[1]
    with openblas.OneThread() as alone:
        if not alone or m * n * k < MIN_PRODUCT or max(m, n) < 2:
            return a @ b
        out = np.empty((m, n), np.result_type(a, b))
        if m >= n:
            split_batch(
                lambda lo, hi: np.matmul(a[lo:hi], b, out=out[lo:hi]), m, m * n * k, mark=False
            )
        else:
            split_batch(
                lambda lo, hi: np.matmul(a, b[:, lo:hi], out=out[:, lo:hi]),
                n,
                m * n * k,
                mark=False,
            )
    return out
