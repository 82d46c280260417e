"""The dtype tables: for each registry entry, the dtypes its forward accepts and those its
backward differentiates (PyTorch's OpInfo ``dtypes`` and ``backward_dtypes``), over the
dtypes tensorgrad has. ``tests/ops/test_dtypes.py`` checks every claim both ways, and
against PyTorch's kernels where PyTorch is installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.ops.registry.core import OpInfo

#: every dtype tensorgrad has (PyTorch's, less bfloat16 and the complex ones)
ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
FLOATING = ("float16", "float32", "float64")
#: everything but bool (PyTorch refuses ``-``, ``abs`` and friends on bools)
NUMBERS = ALL[1:]


@dataclass(frozen=True)
class Dtypes:
    """The dtypes an entry's forward accepts and those its backward differentiates."""

    forward: tuple[str, ...] = ALL
    backward: tuple[str, ...] = FLOATING


def _rows(names: str, dtypes: Dtypes) -> dict[str, Dtypes]:
    return dict.fromkeys(names.split(), dtypes)


#: the entries that do not take every dtype forward (every other entry does, and its
#: backward differentiates the floating dtypes if it is differentiable)
TABLE: dict[str, Dtypes] = {
    # PyTorch's float-only kernels: the activations, softmax, the norms and losses, the
    # means and variances, and what is computed in float whatever the input
    **_rows(
        """leaky_relu_0.01 leaky_relu_0.2 prelu hardswish gelu_none gelu_tanh softmax log_softmax
        hypot logaddexp logaddexp2 cdist rms_norm cosine_similarity cross_entropy layer_norm lerp
        adaptive_avg_pool2d avg_pool2d_backward softplus elu silu binary_cross_entropy
        binary_cross_entropy_weighted binary_cross_entropy_with_logits_weighted
        cross_entropy_weighted nll_loss l1_loss smooth_l1_loss huber_loss mean
        var_correction0 var_correction1 std_correction0 std_correction1 norm logcumsumexp
        batch_norm_train group_norm kl_div lstm_layer gru_layer nextafter""",
        Dtypes(FLOATING),
    ),
    # numbers but not bools: PyTorch refuses ``-``, ``abs``, rounding, products and the
    # remainders on bool tensors
    **_rows(
        """relu einsum tensordot cross conv2d conv2d_relu conv2d_relu_max_pool2d conv1d sub
        conv2d_per_sample
        rsub_scalar neg pow_tensor mod_operator div_floor div_trunc floor ceil round trunc
        abs matmul tg_matmul linear_chain binary_cross_entropy_with_logits max_pool2d
        scatter_reduce_mean scatter_reduce_mean_exclude_self median_dim kthvalue remainder
        fmod""",
        Dtypes(NUMBERS),
    ),
    **_rows("argmax argmin", Dtypes(NUMBERS, ())),
    # the transposed convolutions and average pooling: PyTorch's CPU kernels take int64
    **_rows("conv_transpose2d conv_transpose1d avg_pool2d", Dtypes(("int64", *FLOATING))),
    # PyTorch's im2col and col2im kernels: floats and bools
    **_rows("unfold fold", Dtypes(("bool", *FLOATING))),
    # alpha = -1.5 is cast to an integer self's dtype: -1 does not fit uint8 (PyTorch's error)
    "index_add_along_dim": Dtypes(tuple(d for d in ALL if d != "uint8")),
}


_INTEGERS = NUMBERS[:-3]

#: where tensorgrad does not yet do what the table (PyTorch) says: entry -> (dtypes, why).
#: Their checks are expected to fail (not strictly: a fix lands without editing this)
OPEN: dict[str, tuple[tuple[str, ...], str]] = {}
#: where only the comparison with PyTorch fails: tensorgrad refuses with another error type,
#: or gives another result dtype
OPEN_AGAINST_TORCH: dict[str, tuple[tuple[str, ...], str]] = {}

#: deliberate differences from PyTorch's CPU kernels: entry -> (dtypes, why)
DELIBERATE: dict[str, tuple[tuple[str, ...], str]] = {
    "cdist": (("float16",), "PyTorch's CPU cdist has no float16 kernel; tensorgrad computes it"),
}


def claim(info: OpInfo) -> Dtypes:
    """The entry's claim: its row of the table, or every dtype forward and the floating
    ones backward (none for an entry that is not differentiable)."""
    row = TABLE.get(info.name, Dtypes())
    return row if info.differentiable else Dtypes(row.forward, ())
