"""tensorgrad's benchmarks: ``python -m bench`` (see ``docs/performance.md``).

Each section is a module with ``run(args) -> str`` returning Markdown: ``mlp`` (training and
inference against NumPy by hand and PyTorch), ``ops`` (per-op overhead and throughput),
``cnn`` (PyTorch's MNIST convolutional net against PyTorch and NumPy by hand), ``seq``
(GPTs and an LSTM word language model against PyTorch), ``scalar``
(the scalar engine), ``memory`` (peak and steady-state memory), ``loader`` (items per
second through the DataLoader), ``func`` (``tg.func``: per-sample gradients, a JVP's cost,
jacfwd against jacrev), ``vmap`` (per-sample gradients of a CNN and the MLP against
torch.func, batched jacrev), ``checkpoint`` (``tg.save``/``tg.load`` against PyTorch's),
``jit`` (the numba kernels of the ``[jit]`` extra: their effect on the sequence models and
ops, their compile time) and, when mpi4py is installed, ``distributed`` (data-parallel
training on two MPI ranks).
"""

import importlib.util

SECTIONS = (
    "mlp",
    "cnn",
    "seq",
    "ops",
    "scalar",
    "memory",
    "loader",
    "func",
    "vmap",
    "checkpoint",
    "jit",
)
if importlib.util.find_spec("mpi4py") is not None:  # found without starting MPI
    SECTIONS += ("distributed",)
