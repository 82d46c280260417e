"""tensorgrad's benchmarks: ``python -m bench`` (see ``docs/performance.md``).

Each section is a module with ``run(args) -> str`` returning Markdown: ``mlp`` (training and
inference against NumPy by hand and PyTorch), ``ops`` (per-op overhead and throughput),
``cnn`` (PyTorch's MNIST convolutional net against PyTorch and NumPy by hand), ``scalar``
(the scalar engine) and ``memory`` (peak and steady-state memory).
"""

SECTIONS = ("mlp", "cnn", "ops", "scalar", "memory")
