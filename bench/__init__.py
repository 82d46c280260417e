"""tensorgrad's benchmarks: ``python -m bench`` (see ``docs/performance.md``).

Each section is a module with ``run(args) -> str`` returning Markdown: ``mlp`` (training and
inference against NumPy by hand and PyTorch), ``ops`` (per-op overhead and throughput),
``scalar`` (the scalar engine) and ``memory`` (peak and steady-state memory).
"""

SECTIONS = ("mlp", "ops", "scalar", "memory")
