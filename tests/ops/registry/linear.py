"""Registry entries for ``tensorgrad/ops/linear.py``: the fused linear layer and linear chain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, Shape, exempt, register, uniform


# ---- fused neural-network ops --------------------------------------------------------------
def _linear_samples(bias: bool) -> Callable[[np.random.Generator], list[Sample]]:
    """Samples for linear."""
    cases = [  # (description, input shape, out_features, layouts)
        ("2d", (4, 3), 2, "CCC"),
        ("batched", (2, 4, 3), 2, "CCC"),
        ("1d", (3,), 2, "CCC"),
        ("batch1", (1, 3), 2, "CCC"),
        ("size1", (1, 1), 1, "CCC"),
        ("empty_batch", (0, 3), 2, "CCC"),
        ("views", (3, 3), 2, "TSS"),
    ]

    def samples(rng: np.random.Generator) -> list[Sample]:
        result = []
        for desc, shape, n_out, layouts in cases:
            args = (uniform(rng, shape), uniform(rng, (n_out, shape[-1])))
            args += (uniform(rng, (n_out,)),) if bias else ()
            result.append(Sample(args, {}, desc, tuple(layouts[: len(args)])))
        return result

    return samples


_LINEAR_ERROR = ErrorInput(
    (np.ones((4, 5)), np.ones((2, 3))),
    ValueError,
    r"^linear: input of shape \(4, 5\) does not match weight of shape \(2, 3\)",
    desc="mismatch",
)
register(
    OpInfo(
        "linear",
        lambda x, w, b: _apply(ops.Linear(), x, w, b),
        lambda x, w, b: x @ w.T + b,
        _linear_samples(bias=True),
        errors=(
            replace(_LINEAR_ERROR, args=(*_LINEAR_ERROR.args, np.ones(2))),
            ErrorInput(
                (np.ones((4, 3)), np.ones(3), np.ones(2)),
                ValueError,
                r"^linear: weight must be 2-D \(out, in\), got shape \(3,\)",
                desc="weight_1d",
            ),
            ErrorInput(  # would broadcast into a (2, 2) output if not refused
                (np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 1))),
                ValueError,
                r"^linear: bias of shape \(2, 1\) does not match weight of shape \(2, 2\)",
                desc="bias_shape",
            ),
        ),
    )
)
register(
    OpInfo(
        "linear_nobias",
        lambda x, w: _apply(ops.Linear(), x, w),
        lambda x, w: x @ w.T,
        _linear_samples(bias=False),
        errors=(_LINEAR_ERROR,),
    )
)


def _chain_reference(args: Sequence[np.ndarray], steps: tuple[str, ...]) -> np.ndarray:
    x, params = args[0], list(args[1:])
    for step in steps:
        if step == "relu":
            x = np.maximum(x, 0)
        else:
            x = x @ params.pop(0).T
            if step == "linear+bias":
                x = x + params.pop(0)
    return x


#: (steps, the features after each linear step) for linear_chain's samples
_CHAINS = (
    (("linear+bias", "relu"), (1,)),
    (("linear+bias", "relu", "linear", "relu", "linear+bias"), (3, 3, 2)),
    (("relu", "linear+bias", "relu", "relu"), (2,)),  # starts with, and repeats, a ReLU
    (("linear",), (2,)),
)


def _chain_samples(rng: np.random.Generator) -> list[Sample]:
    """Samples for linear_chain: every ReLU's input at least 0.05 away from its kink at 0,
    where finite differences would straddle it."""
    cases = [  # (description, input shape, layout: of the input; a view's parameters are strided)
        ("2d", (4, 3), "C"),
        ("batched", (2, 4, 3), "C"),
        ("1d", (3,), "C"),
        ("size1", (1, 1), "C"),
        ("empty_batch", (0, 3), "C"),
        ("views", (3, 3), "T"),
    ]

    def draw(shape: Shape, steps: tuple[str, ...], widths: tuple[int, ...]) -> tuple:
        for _ in range(1000):
            args, n_in, outs = [uniform(rng, shape)], shape[-1], iter(widths)
            x, clear = args[0], True
            for step in steps:
                if step == "relu":
                    clear = clear and bool(np.all(np.abs(x) > 0.05))
                    x = np.maximum(x, 0)
                    continue
                n_out = next(outs)
                args.append(uniform(rng, (n_out, n_in)))
                if step == "linear+bias":
                    args.append(uniform(rng, (n_out,)))
                x, n_in = (
                    _chain_reference([x, *args[-1 - (step == "linear+bias") :]], (step,)),
                    n_out,
                )
            if clear:
                return tuple(args)
        raise AssertionError("no sample away from the kinks")

    result = []
    for steps, widths in _CHAINS:
        for desc, shape, layout in cases:
            args = draw(shape, steps, widths)
            name = "_".join(s.replace("+", "_") for s in steps)
            layouts = (layout, *(layout if layout == "C" else "S") * (len(args) - 1))
            result.append(Sample(args, {"steps": steps}, f"{name}-{desc}", layouts))
    return result


register(
    OpInfo(
        "linear_chain",
        lambda *args, steps: _apply(ops.LinearChain(steps), *args),
        lambda *args, steps: _chain_reference(args, steps),
        _chain_samples,
        errors=(
            ErrorInput(
                (np.ones((4, 5)), np.ones((3, 5)), np.ones(3), np.ones((2, 4))),
                ValueError,
                r"^linear_chain: step 2 \(linear\): input of shape \(4, 3\) does not match "
                r"weight of shape \(2, 4\) \(expected input \(\.\.\., 4\)\)",
                {"steps": ("linear+bias", "relu", "linear")},
                "mismatch",
            ),
            ErrorInput(
                (np.ones((4, 3)), np.ones((2, 3)), np.ones((2, 1))),
                ValueError,
                r"^linear_chain: step 0 \(linear\+bias\): bias of shape \(2, 1\) does not "
                r"match weight of shape \(2, 3\)",
                {"steps": ("linear+bias", "relu")},
                "bias_shape",
            ),
            ErrorInput(
                (np.ones((4, 3)), np.ones((2, 3)), np.ones(2)),
                TypeError,
                r"^linear_chain: steps \('linear', 'relu'\) take 1 weights and biases after "
                r"the input, got 2",
                {"steps": ("linear", "relu")},
                "too_many_params",
            ),
            ErrorInput(
                (np.ones((4, 3)),),
                TypeError,
                r"^linear_chain: steps \('linear\+bias',\) take 2 weights and biases after "
                r"the input, got 0",
                {"steps": ("linear+bias",)},
                "too_few_params",
            ),
            ErrorInput(
                (np.ones((4, 3)),),
                ValueError,
                r"^linear_chain: a step must be 'linear', 'linear\+bias' or 'relu', got 'tanh'",
                {"steps": ("relu", "tanh")},
                "unknown_step",
            ),
            ErrorInput(
                (np.ones((4, 3)),),
                ValueError,
                r"^linear_chain: needs at least one step",
                {"steps": ()},
                "no_steps",
            ),
        ),
    )
)


exempt("0-d", "the weight is 2-D; the input at least 1-D", "linear", "linear_nobias")
exempt("0-d", "the weights are 2-D; the input at least 1-D", "linear_chain")
