"""L-BFGS, PyTorch's ``torch.optim.LBFGS``: its algorithm step for step (the two-loop
recursion over a limited history, the first step's scaling, the stopping rules) and its
strong-Wolfe line search with cubic interpolation, on one flat vector of all parameters.

Each ``step(closure)`` runs up to ``max_iter`` iterations, calling ``closure`` (which
zeroes the gradients, computes the loss, calls ``backward`` and returns the loss) once per
function evaluation. The scalars are computed in float64, PyTorch's in the parameters'
dtype: float64 trajectories agree with PyTorch's to rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad, no_grad
from tensorgrad.optim.optimizer import Optimizer, _array, _check_nonnegative

#: the state LBFGS keeps (under its first parameter, as PyTorch's): numbers, flat vectors
#: of all parameters, and lists of them
_NUMBERS = ("func_evals", "n_iter")
_SCALARS = ("t", "H_diag", "prev_loss")
_VECTORS = ("d", "prev_flat_grad")
_LISTS = ("old_dirs", "old_stps")
_SCALAR_LISTS = ("ro", "al")


def _cubic_interpolate(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float, bounds: Any = None
) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), kept within
    ``bounds`` (default: between x1 and x2); their midpoint where the cubic has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square**0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(
    obj_func: Callable[[list[np.ndarray], float, np.ndarray], tuple[float, np.ndarray]],
    x: list[np.ndarray],
    t: float,
    d: np.ndarray,
    f: float,
    g: np.ndarray,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, np.ndarray, float, int]:
    """A step length t along d satisfying the strong Wolfe conditions (sufficient decrease
    with ``c1``, curvature with ``c2``): bracket, then zoom with cubic interpolation
    (Nocedal and Wright, Algorithms 3.5 and 3.6, as PyTorch implements them). Returns the
    loss and gradient there, t, and the number of evaluations."""
    d_norm = float(np.abs(d).max())
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[np.ndarray] = []
    bracket_gtd: list[float] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # close to an end of the bracket twice, or beyond it: move 10% of it inside
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """PyTorch's L-BFGS (Nocedal, 1980; minFunc's form). One parameter group only;
    ``step`` needs a ``closure`` that re-evaluates the model and returns the loss.

    ``line_search_fn`` is None (a fixed step of ``lr``, the first one scaled by
    ``min(1, 1/|g|₁)``) or ``"strong_wolfe"``. State (under the first parameter, as in
    PyTorch): ``func_evals``, ``n_iter``, the last direction ``d`` and step ``t``, the
    history ``old_dirs``/``old_stps``/``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        _check_nonnegative("learning rate", float(_array(group["lr"])))
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")

    # ----------------------------------------------------------------- the flat vector
    def _gather_flat_grad(self) -> np.ndarray:
        """Every parameter's gradient, flattened and joined (zeros where there is none)."""
        return np.concatenate(
            [
                np.zeros(p.numel(), p.dtype) if p._grad is None else grad_array(p).reshape(-1)
                for p in self._params()
            ]
        )

    def _add_grad(self, step_size: float, update: np.ndarray) -> None:
        """θ ← θ + step_size · update, the flat update cut into the parameters' shapes."""
        offset = 0
        for p in self._params():
            n = p.numel()
            p._data += (
                (step_size * update[offset : offset + n])
                .reshape(p.shape)
                .astype(p.dtype, copy=False)
            )
            offset += n
        mark_changed(self._params())

    def _clone_param(self) -> list[np.ndarray]:
        return [p._data.copy() for p in self._params()]

    def _set_param(self, params_data: list[np.ndarray]) -> None:
        for p, data in zip(self._params(), params_data, strict=True):
            np.copyto(p._data, data)
        mark_changed(self._params())

    def _directional_evaluate(
        self, closure: Callable[[], Any], x: list[np.ndarray], t: float, d: np.ndarray
    ) -> tuple[float, np.ndarray]:
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ----------------------------------------------------------------- the step
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to ``max_iter`` L-BFGS iterations; returns the loss ``closure`` gave first."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the loss")
        self._check_writeable()
        with no_grad():
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr = float(_array(group["lr"]))
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params()[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        opt_cond = float(np.abs(flat_grad).max(initial=0.0)) <= tolerance_grad
        if opt_cond:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # ---- the direction: the two-loop recursion over the history
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:  # curvature positive: remember this pair
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y))
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q)) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(num_old):
                    be_i = float(old_dirs[i].dot(r)) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            # ---- the step length
            first = state["n_iter"] == 1  # the first step is scaled by min(1, 1/|g|₁)
            t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr if first else lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:  # not a descent direction any more
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._clone_param()

                def obj_func(x: list[np.ndarray], t: float, d: np.ndarray):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd
                )
                self._add_grad(t, d)
                opt_cond = float(np.abs(flat_grad).max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:  # the last iteration's loss is not needed
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(np.abs(flat_grad).max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            # ---- stopping rules
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(np.abs(d * t).max()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"], state["t"] = d, t
        state["old_dirs"], state["old_stps"], state["ro"] = old_dirs, old_stps, ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"], state["prev_loss"] = prev_flat_grad, prev_loss
        return orig_loss

    # ----------------------------------------------------------------- loading state
    def _read_entry(
        self, index: Any, p: Tensor, group: dict[str, Any], values: Any, problems: list[str]
    ) -> dict[str, Any]:
        """LBFGS's state (its own layout, PyTorch's tensors read as arrays), checked: flat
        vectors must have as many elements as all parameters together."""
        if not isinstance(values, Mapping):
            problems.append(f"state of parameter {index}: expected a dict, got {values!r}")
            return {}
        size = sum(q.numel() for q in self._params())
        known = _NUMBERS + _SCALARS + _VECTORS + _LISTS + _SCALAR_LISTS
        unexpected = [name for name in values if name not in known]
        if unexpected:
            problems.append(
                f"state of parameter {index}: unexpected keys {unexpected} (LBFGS keeps "
                f"{list(known)})"
            )
        entry: dict[str, Any] = {}

        def vector(name: str, value: Any) -> np.ndarray | None:
            array = _array(value)
            if array is None or array.dtype.kind not in "fiu" or array.size != size:
                problems.append(
                    f"state {name!r} of parameter {index}: expected a flat vector of {size} "
                    f"numbers, got {value!r:.60}"
                )
                return None
            return np.array(array, dtype=p.dtype, copy=True).reshape(-1)

        def scalar(value: Any) -> Any:
            return None if value is None else float(_array(value).reshape(()))

        for name, value in values.items():
            if name in _NUMBERS:
                entry[name] = int(_array(value).reshape(()))
            elif name in _SCALARS:
                entry[name] = scalar(value)
            elif name in _VECTORS:
                entry[name] = None if value is None else vector(name, value)
            elif name in _LISTS:
                entry[name] = [vector(name, v) for v in value]
            elif name in _SCALAR_LISTS:
                entry[name] = [scalar(v) for v in value]
        return entry
