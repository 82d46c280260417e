"""Small programs of views and in-place changes, run step for step in tensorgrad and PyTorch.

A program is a list of steps over a pool of tensors: three to start with (two leaves that
require grad, one plain tensor), and every step that makes a tensor adds it to the pool. A
step is a plain tuple ``(kind, name, i, j, k, quiet)`` of names and small integers, so that
hypothesis draws and shrinks programs freely: ``i`` and ``j`` pick tensors from the pool
(modulo its size), ``k`` picks among a few indices or ways to reach the target, ``quiet`` runs
the step under ``no_grad``. What the integers pick is resolved when the step runs, from the
tensors' shapes, the same way in both libraries; a step that does not fit (shapes that do not
broadcast) is skipped in both.

:func:`run` executes a program in one library and returns what the two must agree on: each
step's outcome (None, "skip", or the type of the error it raised), every tensor's final
value, ``requires_grad`` and ``is_leaf``; then, after a backward of a weighted sum of every
tensor that requires grad, the gradients of the leaves and of the tensors that
``retain_grad``, and what the gradient hooks saw. :func:`compare` asserts the agreement.

Where the two libraries differ on purpose, a program steers clear (each is tested on its own
in ``test_inplace.py``): views are made with grad mode on (a view made under ``no_grad`` of a
tensor that requires grad is a constant here, while PyTorch says it requires grad and yet
sends it no gradient), an operand never overlaps the tensor it changes only in part
(PyTorch refuses that even without gradients, NumPy computes it), nothing is changed in
place through an expanded tensor (PyTorch allows it where no two elements share memory or
all get one value, tensorgrad never: NumPy's broadcast arrays are read-only), and PyTorch's
``relu_``
saves its output where tensorgrad's saves the input it copied, so PyTorch runs it as
``x.copy_(x.relu())``, which saves nothing either.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

UNARY = ("mul2", "exp", "tanh", "sigmoid", "square", "clone", "neg", "sum0")
BINARY = ("add", "mul", "sub", "matmul")
VIEWS = (
    "rows",
    "cols",
    "int",
    "T",
    "transpose",
    "reshape",
    "view",
    "expand",
    "unsqueeze",
    "detach",
    "data",
)
INPLACE = (
    "add_",
    "add_t",
    "mul_",
    "mul_t",
    "sub_t",
    "div_",
    "iadd",
    "imul",
    "clamp_",
    "relu_",
    "neg_",
    "exp_",
    "sigmoid_",
    "tanh_",
    "copy_",
    "fill_",
    "zero_",
    "masked_fill_",
    "setitem",
    "setitem_t",
)
KINDS = {"unary": UNARY, "binary": BINARY, "view": VIEWS, "inplace": INPLACE}
OTHER = ("retain_grad", "hook")

SHAPES = ((3, 4), (4,), (3, 4))


def initial(lib: Any, seed: int) -> list[Any]:
    """The starting pool: leaves ``a`` (3, 4) and ``b`` (4,) that require grad, plain ``c``."""
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=shape) for shape in SHAPES]
    return [
        lib.tensor(arrays[0], requires_grad=True),
        lib.tensor(arrays[1], requires_grad=True),
        lib.tensor(arrays[2]),
    ]


def _broadcasts(shape: tuple, target: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (without changing ``target``)."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _compatible(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _overlaps_in_part(x: Any, y: Any) -> bool:
    """Whether ``y`` shares memory with ``x`` without being laid out exactly as ``x``."""
    a, b = x.detach().numpy(), y.detach().numpy()
    if not np.shares_memory(a, b):
        return False
    same = a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    return not (same and a.shape == b.shape and a.strides == b.strides)


def _shares(x: Any, y: Any) -> bool:
    return np.shares_memory(x.detach().numpy(), y.detach().numpy())


def _index(shape: tuple, k: int) -> Any:
    """One of a few indices that fit ``shape`` (None when none does): each picks a view."""
    if not shape:
        return None
    if shape[0] == 0:
        return slice(k % 2, None)
    if len(shape) == 1:  # an int picks one element: a 0-d view
        return [slice(k % 2, None), 0, -1][k % 3]
    choices: list[Any] = [0, slice(0, 2), slice(1, None), (slice(None), 1), (slice(0, 2), 1)]
    return choices[k % len(choices)]


def _mask(shape: tuple) -> np.ndarray:
    return np.arange(int(np.prod(shape))).reshape(shape) % 3 == 0


def _weight(shape: tuple) -> np.ndarray:
    """A fixed weight per element for the final loss, so every gradient entry differs."""
    return np.cos(np.arange(int(np.prod(shape)), dtype=float)).reshape(shape) + 1.5


class _Program:
    """The tensors of a program, and what its gradient hooks saw."""

    def __init__(self, lib: Any, tensors: list) -> None:
        self.lib = lib
        self.pool = tensors
        self.hooks: list[Any] = []  # per hook: the gradients it saw
        self.hooked: list[tuple[Any, int]] = []  # (tensor, hook number)
        self.unsure: set[int] = set()  # hooks left out of the comparison: see changing
        self.unsure_grads: set[int] = set()  # tensors whose retained .grad is left out
        self.quietly_changed: set[int] = set()  # ids of views changed under no_grad
        self.expanded: set[int] = set()  # ids of expanded tensors and of views of them
        self.made_from: dict[int, Any] = {}  # id of a view step's tensor: what it viewed

    def is_view(self, t: Any) -> bool:
        if self.lib.__name__ == "torch":
            return t._is_view()
        return t._view is not None

    def hook(self, x: Any) -> None:
        seen: list = []
        self.hooks.append(seen)
        self.hooked.append((x, len(self.hooks) - 1))
        # PyTorch 2.13 crashes (a segmentation fault) registering a hook on a view of a
        # leaf whose memory changed under no_grad, unless grad_fn was looked at first
        _ = x.grad_fn
        x.register_hook(lambda g: seen.append(g.detach().numpy().copy()))

    def changing(self, x: Any, quiet: bool, through: Any = None) -> None:
        """``x`` is about to be changed in place (``through`` is the pool's tensor that
        ``x`` is, or that ``x`` was made from for the step). A hook registered on it while it
        was a view, or on a view it was made from, sees here the gradient of the view's uses
        before the change and after it (the change is recorded on top of the view's old
        node); in PyTorch, whose write-back (``CopySlices``) skips that node, only of the
        uses before (docs/porting.md). A change under no_grad makes PyTorch regenerate the
        node of every view of that memory (it goes by version counters) and move
        retain_grad to it, so that the view's ``.grad`` and hooks count only its uses after
        the change; here the graph did not change, so they count all its uses. Differences
        of bookkeeping, not of gradients: such hooks and retained gradients are left out of
        the comparison."""
        made_from = {id(t) for t in self.viewed_from(x if through is None else through)}
        for t, n in self.hooked:
            if (t is x or id(t) in made_from) and self.is_view(t):
                self.unsure.add(n)
        if quiet:  # by version counter, as PyTorch goes: every view of x's base
            base = self.base(x)
            self.quietly_changed.update(
                id(t)
                for t in self.pool
                if self.is_view(t) and (_shares(t, x) or self.base(t) is base)
            )

    def viewed_from(self, t: Any) -> list[Any]:
        """``t`` and the pool's tensors it was made from by view steps, nearest first."""
        chain = [t]
        while id(chain[-1]) in self.made_from:
            chain.append(self.made_from[id(chain[-1])])
        return chain

    def base(self, t: Any) -> Any:
        """The tensor that ``t`` is a view of (``t`` itself when it is none)."""
        if self.lib.__name__ == "torch":
            return t._base if t._is_view() else t
        return t._view.root if t._view is not None else t

    def settle(self) -> None:
        """Mark what :meth:`changing` says to leave out, once the program has run."""
        for t, n in self.hooked:
            if id(t) in self.quietly_changed:
                self.unsure.add(n)
        for n, t in enumerate(self.pool):
            if id(t) in self.quietly_changed and t.retains_grad:
                self.unsure_grads.add(n)


def _step(program: _Program, step: tuple) -> Any:
    """Run one step; return the new tensor it makes, None, or ``"skip"`` when the step does
    not fit the shapes. Raises what the library raises."""
    kind, name, i, j, k, quiet = step
    lib, pool = program.lib, program.pool
    x = pool[i % len(pool)]
    y = pool[j % len(pool)]
    if kind == "view":
        made = _view(x, name, k)  # with grad mode on: see the module docstring
        if isinstance(made, str):
            return made
        if name == "expand" or id(x) in program.expanded:
            program.expanded.add(id(made))
        program.made_from[id(made)] = x
        return made
    if kind == "retain_grad":
        if not x.requires_grad or x.is_leaf:
            return "skip"
        x.retain_grad()
        return None
    if kind == "hook":
        if not x.requires_grad:
            return "skip"
        program.hook(x)
        return None
    with lib.no_grad() if quiet else contextlib.nullcontext():
        if kind == "unary":
            return _unary(x, name)
        if kind == "binary":
            return _binary(x, y, name)
        if kind == "inplace":
            return _inplace(program, x, y, name, k, quiet)
    raise AssertionError(kind)


def _unary(x: Any, name: str) -> Any:
    if name == "mul2":
        return x * 2.5
    if name == "exp":
        return x.exp()
    if name == "tanh":
        return x.tanh()
    if name == "sigmoid":
        return x.sigmoid()
    if name == "square":
        return x * x
    if name == "clone":
        return x.clone()
    if name == "neg":
        return -x
    if name == "sum0":
        return x.sum(0, keepdim=True) if x.ndim else x * 1.0
    raise AssertionError(name)


def _binary(x: Any, y: Any, name: str) -> Any:
    if name == "matmul":
        if x.ndim != 2 or y.ndim not in (1, 2) or x.shape[1] != y.shape[0]:
            return "skip"
        return x @ y
    if not _compatible(tuple(x.shape), tuple(y.shape)):
        return "skip"
    if name == "add":
        return x + y
    if name == "mul":
        return x * y
    if name == "sub":
        return x - y
    raise AssertionError(name)


def _view(x: Any, name: str, k: int) -> Any:
    shape = tuple(x.shape)
    if name == "rows":
        return x[k % 2 :] if shape and shape[0] else "skip"
    if name == "cols":
        return x[:, k % 2 : 3] if len(shape) >= 2 else "skip"
    if name == "int":  # on 1-D, a 0-d view of one element
        return x[k % shape[0]] if shape and shape[0] else "skip"
    if name == "T":
        return x.T if len(shape) == 2 else "skip"
    if name == "transpose":
        return x.transpose(0, 1) if len(shape) >= 2 else "skip"
    if name == "reshape":  # (to the same shape, tensorgrad returns x itself: not a view)
        return x.reshape(-1) if len(shape) >= 2 else "skip"
    if name == "view":
        return x.view(-1) if len(shape) >= 2 else "skip"
    if name == "expand":
        return x.expand(2, *shape)
    if name == "unsqueeze":
        return x.unsqueeze(0)
    if name == "detach":
        return x.detach()
    if name == "data":
        return x.data
    raise AssertionError(name)


def _target(x: Any, k: int) -> Any:
    """What an in-place step changes: ``x``, or a view of it made for the step."""
    way = (k // 5) % 3
    if way == 1 and x.ndim and x.shape[0] > 1:
        return x[1:]
    if way == 2 and x.ndim == 2:
        return x.T
    return x


def _inplace(program: _Program, x: Any, y: Any, name: str, k: int, quiet: bool) -> Any:
    lib = program.lib
    if id(x) in program.expanded:
        return "skip"  # see the module docstring
    through, x = x, _target(x, k)
    shape = tuple(x.shape)

    if name in ("add_t", "mul_t", "sub_t", "copy_", "iadd", "setitem_t"):
        if _overlaps_in_part(x, y):
            return "skip"  # see the module docstring
        if name != "setitem_t" and not _broadcasts(tuple(y.shape), shape):
            return "skip"
    index = _index(shape, k) if name in ("setitem", "setitem_t") else None
    if name in ("setitem", "setitem_t"):
        if index is None:
            return "skip"
        if name == "setitem_t" and not _broadcasts(tuple(y.shape), tuple(x[index].shape)):
            return "skip"
    program.changing(x, quiet, through)
    # PyTorch 2.13 brings a view whose base got a node since (``c[0:]`` after ``c.add_(a)``)
    # up to date only when its grad_fn is looked at: changed in place before that, it
    # raises "a leaf Variable that requires grad is being used in an in-place operation",
    # after it it works; tensorgrad always works. Look first, for PyTorch's own answer.
    _ = x.grad_fn
    if name == "add_":
        x.add_(0.5)
    elif name == "add_t":
        x.add_(y)
    elif name == "mul_":
        x.mul_(1.5)
    elif name == "mul_t":
        x.mul_(y)
    elif name == "sub_t":
        x.sub_(y)
    elif name == "div_":
        x.div_(2.0)
    elif name == "iadd":
        x += y
    elif name == "imul":
        x *= -0.75
    elif name == "clamp_":
        x.clamp_(-0.25, 0.75)
    elif name == "relu_":
        if lib.__name__ == "torch":  # see the module docstring
            x.copy_(x.relu())
        else:
            x.relu_()
    elif name == "neg_":
        x.neg_()
    elif name == "exp_":
        x.exp_()
    elif name == "sigmoid_":
        x.sigmoid_()
    elif name == "tanh_":
        x.tanh_()
    elif name == "copy_":
        x.copy_(y)
    elif name == "fill_":
        x.fill_(1.25)
    elif name == "zero_":
        x.zero_()
    elif name == "masked_fill_":
        x.masked_fill_(lib.tensor(_mask(shape)), -2.0)
    elif name == "setitem":
        x[index] = 0.375
    elif name == "setitem_t":
        x[index] = y
    else:
        raise AssertionError(name)
    return None


def run(lib: Any, steps: list[tuple], seed: int) -> dict[str, Any]:
    """Run ``steps`` in ``lib`` (tensorgrad or torch); return what the two must agree on."""
    program = _Program(lib, initial(lib, seed))
    pool = program.pool
    outcomes: list[Any] = []
    for step in steps:
        try:
            made = _step(program, step)
        except Exception as exc:  # both libraries must raise, the same type
            outcomes.append(type(exc).__name__)
            continue
        outcomes.append("skip" if isinstance(made, str) else None)
        if made is not None and not isinstance(made, str):
            pool.append(made)
    record: dict[str, Any] = {
        "outcomes": outcomes,
        "values": [t.detach().numpy().copy() for t in pool],
        "requires_grad": [bool(t.requires_grad) for t in pool],
        "is_leaf": [bool(t.is_leaf) for t in pool],
        "backward": None,
    }
    program.settle()
    loss = None
    for t in pool:
        if t.requires_grad:
            term = (t * lib.tensor(_weight(tuple(t.shape)))).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        try:
            loss.backward()
        except Exception as exc:
            record["backward"] = type(exc).__name__
    record["grads"] = [
        None if t.grad is None or n in program.unsure_grads else t.grad.detach().numpy().copy()
        for n, t in enumerate(pool)
        if t.is_leaf or t.retains_grad
    ]
    record["unsure_grads"] = program.unsure_grads
    record["hooks"] = program.hooks
    record["unsure"] = program.unsure
    return record


def _close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=what)


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Assert that two records of one program agree (errors by type, numbers to 1e-12
    relative to 1e-10 where values grow through exp and products)."""
    assert ours["outcomes"] == theirs["outcomes"], "steps raised differently"
    assert len(ours["values"]) == len(theirs["values"])
    for n, (a, b) in enumerate(zip(ours["values"], theirs["values"])):
        _close(a, b, f"value of tensor {n}")
    assert ours["requires_grad"] == theirs["requires_grad"], "requires_grad differs"
    assert ours["is_leaf"] == theirs["is_leaf"], "is_leaf differs"
    assert ours["backward"] == theirs["backward"], "backward raised differently"
    if ours["backward"] is not None:
        return
    assert ours["unsure_grads"] == theirs["unsure_grads"]
    assert len(ours["grads"]) == len(theirs["grads"])
    for n, (a, b) in enumerate(zip(ours["grads"], theirs["grads"])):
        assert (a is None) == (b is None), f"gradient {n}: {a} vs {b}"
        if a is not None:
            _close(a, b, f"gradient {n}")
    assert len(ours["hooks"]) == len(theirs["hooks"])
    unsure = ours["unsure"] | theirs["unsure"]
    for n, (a, b) in enumerate(zip(ours["hooks"], theirs["hooks"])):
        if n in unsure:
            continue
        assert len(a) == len(b), f"hook {n} was called {len(a)} times, in PyTorch {len(b)}"
        for g, h in zip(a, b):
            _close(g, h, f"hook {n}")
