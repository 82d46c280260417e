"""tensorgrad's benchmarks: ``python -m bench`` (see ``docs/performance.md``).

Each section is a module with ``run(args) -> str`` returning Markdown: ``mlp`` (training and
inference against NumPy by hand and PyTorch), ``ops`` (per-op overhead and throughput),
``cnn`` (PyTorch's MNIST convolutional net against PyTorch and NumPy by hand), ``scalar``
(the scalar engine), ``memory`` (peak and steady-state memory) and ``loader`` (items per
second through the DataLoader).
"""

SECTIONS = ("mlp", "cnn", "ops", "scalar", "memory", "loader")
