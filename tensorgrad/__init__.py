"""tensorgrad: a small, fast, correct tensor autograd framework on NumPy.

    import tensorgrad as tg
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad  # tensor([2., 4., 6.])

The layers: ``ops`` (each op's forward and VJP, on arrays) → ``Tensor`` and the backward
sweep → ``nn``, ``optim`` and ``data``. The scalar engine ``tensorgrad.scalar`` stands apart.
"""

from tensorgrad import backend, nn, optim
from tensorgrad.autograd import backward, grad
from tensorgrad.backend import (
    bool_,
    float16,
    float32,
    float64,
    get_rng_state,
    int32,
    int64,
    manual_seed,
    set_rng_state,
    uint8,
)
from tensorgrad.creation import (
    arange,
    eye,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from tensorgrad.functional import (
    abs,
    clip,
    cos,
    exp,
    gelu,
    leaky_relu,
    log,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    relu,
    sigmoid,
    sin,
    softmax,
    sqrt,
    sum,
    tanh,
    var,
)
from tensorgrad.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from tensorgrad.serialization import load, save
from tensorgrad.tensor import (
    Tensor,
    as_tensor,
    cat,
    concatenate,
    matmul,
    maximum,
    minimum,
    split,
    stack,
    where,
)

clamp = clip

__version__ = "0.1.0"

__all__ = [
    "Tensor",
    "__version__",
    "abs",
    "arange",
    "as_tensor",
    "backend",
    "backward",
    "bool_",
    "cat",
    "clamp",
    "clip",
    "concatenate",
    "cos",
    "enable_grad",
    "exp",
    "eye",
    "float16",
    "float32",
    "float64",
    "full",
    "full_like",
    "gelu",
    "get_rng_state",
    "grad",
    "int32",
    "int64",
    "is_grad_enabled",
    "leaky_relu",
    "load",
    "log",
    "log_softmax",
    "logsumexp",
    "manual_seed",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "nn",
    "no_grad",
    "ones",
    "ones_like",
    "optim",
    "rand",
    "randint",
    "randn",
    "relu",
    "save",
    "set_grad_enabled",
    "set_rng_state",
    "sigmoid",
    "sin",
    "softmax",
    "split",
    "sqrt",
    "stack",
    "sum",
    "tanh",
    "tensor",
    "uint8",
    "var",
    "where",
    "zeros",
    "zeros_like",
]
