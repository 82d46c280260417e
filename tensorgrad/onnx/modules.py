"""Modules converted as a whole: one call of the module becomes ONNX's own operator, instead
of the ops its forward recorded (which the export then skips).

- ``nn.Embedding`` becomes a ``Gather`` of the weight's rows at the indices. Recorded op by
  op, the lookup is an indexing op that holds the indices as an array, not as a graph value,
  so they would be frozen into the file; here they are the call's argument (a graph input,
  or a value computed from one).
- ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` become ONNX's ``LSTM``, ``GRU`` and ``RNN``, one
  node per layer (ONNX's operators are single-layer, forward or bidirectional), instead of
  the unrolled time loop: the file stays small and the sequence length may vary. The weights
  are reordered inside the graph, from the parameters under their ``state_dict`` names
  (``Gather`` of gate blocks, constant-folded by ONNX Runtime), because the gate orders
  differ: PyTorch's LSTM stacks (input, forget, cell, output), ONNX's (input, output,
  forget, cell); PyTorch's GRU (reset, update, new), ONNX's (update, reset, hidden), with
  ``linear_before_reset=1`` for PyTorch's placement of the reset gate.

A converter takes a :class:`~tensorgrad.onnx.graph.CallInfo` and returns ``(Tensor, value
name)`` pairs for the Tensors of the call's result it computed. Options with no faithful
ONNX form are refused by name (a ``PackedSequence`` input, training-mode dropout between
layers, ``max_norm``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad.core.tensor import Tensor
from tensorgrad.nn.modules.rnn import GRU, LSTM, RNN
from tensorgrad.nn.modules.sparse import Embedding
from tensorgrad.nn.utils.rnn import PackedSequence
from tensorgrad.onnx.graph import CallInfo, elem_type

ModuleConverter = Callable[[CallInfo], list[tuple[Tensor, str]]]
MODULE_CONVERTERS: dict[type, ModuleConverter] = {}


def converts_module(*module_types: type) -> Callable[[ModuleConverter], ModuleConverter]:
    def register(function: ModuleConverter) -> ModuleConverter:
        for module_type in module_types:
            MODULE_CONVERTERS[module_type] = function
        return function

    return register


def _argument(info: CallInfo, position: int, name: str, default: Any = None) -> Any:
    args, kwargs = info.call.args, info.call.kwargs
    return args[position] if len(args) > position else kwargs.get(name, default)


@converts_module(Embedding)
def _embedding(info: CallInfo) -> list[tuple[Tensor, str]]:
    module = info.module
    if module.max_norm is not None:
        raise info.refuse(
            "has max_norm, which rescales the weight's rows in place as it looks them up: "
            "no ONNX mapping"
        )
    indices = _argument(info, 0, "input")
    if not isinstance(indices, Tensor):
        raise info.refuse("was called with indices that are not a Tensor, so not a graph value")
    index = info.value(indices)
    if indices.dtype not in (np.int32, np.int64):  # ONNX's Gather takes int32 or int64
        index = info.add("Cast", [index], to=elem_type(info.graph.onnx, np.int64))
    return [(info.call.result, info.add("Gather", [info.value(module.weight), index], axis=0))]


#: per mode: ONNX's operator, and PyTorch's gate blocks in ONNX's order
_RECURRENT = {
    "LSTM": ("LSTM", (0, 3, 1, 2)),  # (i, f, g, o) → (i, o, f, c)
    "GRU": ("GRU", (1, 0, 2)),  # (r, z, n) → (z, r, h)
    "RNN_TANH": ("RNN", (0,)),
    "RNN_RELU": ("RNN", (0,)),
}


@converts_module(LSTM, GRU, RNN)
def _recurrent(info: CallInfo) -> list[tuple[Tensor, str]]:
    """One ONNX recurrent node per layer; between layers, ONNX's output (T, D, B, H) is laid
    out as PyTorch's (T, B, D·H); the final states of all layers are concatenated."""
    module = info.module
    mode = module.mode
    onnx_type, blocks = _RECURRENT[mode]
    x = _argument(info, 0, "input")
    hx = _argument(info, 1, "hx")
    if isinstance(x, PackedSequence):
        raise info.refuse(
            "was given a PackedSequence: no ONNX mapping here (export the padded batch; ONNX's "
            "sequence_lens is not used)"
        )
    states_given = () if hx is None else hx if isinstance(hx, (tuple, list)) else (hx,)
    if not all(isinstance(t, Tensor) for t in (x, *states_given)):
        raise info.refuse("was called with an input or state that is not a Tensor")
    if module.training and module.dropout and module.num_layers > 1:
        raise info.refuse(
            "is in training mode with dropout between its layers, a random mask that would be "
            "exported as a constant; call model.eval() first"
        )
    lstm = mode == "LSTM"
    output, states = info.call.result
    h_n, c_n = states if lstm else (states, None)
    directions = 2 if module.bidirectional else 1
    hidden = module.hidden_size
    unbatched = x.ndim == 2
    value = info.value(x)
    if unbatched:
        value = info.add("Unsqueeze", [value, info.ints([1])])
    elif module.batch_first:
        value = info.add("Transpose", [value], perm=[1, 0, 2])
    initial: list[str | None] = [None, None]
    if hx is not None:
        for k, state in enumerate(hx if lstm else (hx,)):
            initial[k] = info.value(state)
            if unbatched:
                initial[k] = info.add("Unsqueeze", [initial[k], info.ints([1])])
    order = info.ints(
        np.concatenate([np.arange(b * hidden, (b + 1) * hidden) for b in blocks]).tolist()
    )
    attributes: dict[str, Any] = {
        "hidden_size": hidden,
        "direction": "bidirectional" if directions == 2 else "forward",
    }
    if onnx_type == "GRU":
        attributes["linear_before_reset"] = 1
    if onnx_type == "RNN":
        attributes["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * directions
    finals: list[list[str]] = [[], []]
    for layer in range(module.num_layers):
        per_direction = [module._layer_weights(layer * directions + d) for d in range(directions)]

        def stacked(parts: list[str]) -> str:
            parts = [info.add("Unsqueeze", [p, info.ints([0])]) for p in parts]
            return parts[0] if len(parts) == 1 else info.add("Concat", parts, axis=0)

        def reordered(tensor: Tensor) -> str:
            return info.add("Gather", [info.value(tensor), order], axis=0)

        w = stacked([reordered(weights[0]) for weights in per_direction])
        r = stacked([reordered(weights[1]) for weights in per_direction])
        b = ""
        if module.bias:
            b = stacked(
                [
                    info.add("Concat", [reordered(weights[2]), reordered(weights[3])], axis=0)
                    for weights in per_direction
                ]
            )
        inputs = [value, w, r, b, ""]
        for state in initial[: 2 if lstm else 1]:
            if state is None:
                inputs.append("")
            else:  # this layer's directions of (layers·directions, batch, hidden)
                start, end = info.ints([layer * directions]), info.ints([(layer + 1) * directions])
                inputs.append(info.add("Slice", [state, start, end, info.ints([0])]))
        while inputs[-1] == "":
            inputs.pop()
        made = info.add(onnx_type, inputs, outputs=3 if lstm else 2, **attributes)
        everything = info.add("Transpose", [made[0]], perm=[0, 2, 1, 3])  # (T, B, D, H)
        value = info.add("Reshape", [everything, info.ints([0, 0, -1])])
        finals[0].append(made[1])
        if lstm:
            finals[1].append(made[2])
    ends = [
        parts[0] if len(parts) == 1 else info.add("Concat", parts, axis=0)
        for parts in finals[: 2 if lstm else 1]
    ]
    if unbatched:
        value = info.add("Squeeze", [value, info.ints([1])])
        ends = [info.add("Squeeze", [end, info.ints([1])]) for end in ends]
    elif module.batch_first:
        value = info.add("Transpose", [value], perm=[1, 0, 2])
    made_states = [(h_n, ends[0])] + ([(c_n, ends[1])] if lstm else [])
    return [(output, value), *made_states]
