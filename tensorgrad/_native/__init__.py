"""The tricks below NumPy, in one room. Each module reaches past NumPy's Python API for
speed, says why in its docstring, and has an off-switch in the environment under which the
plain NumPy path runs (CI runs the whole suite both ways).

============  =================================================  ============================
module        what, for speed                                    off-switch
============  =================================================  ============================
``openblas``  the OpenBLAS NumPy loaded; holding it to one       (used by the two below)
              thread while tensorgrad's threads multiply
``threads``   tensorgrad's worker threads: convolution and       ``TENSORGRAD_THREADS=1``
              pooling chunks, and while they are in use the
              products and updates; ``tg.set_num_threads``
``axpy``      BLAS ``y += a·x`` in one pass, for the optimizers  ``TENSORGRAD_NO_BLAS=1``
``malloc``    glibc's malloc keeps freed memory for the next     ``TENSORGRAD_KEEP_MEMORY=0``
              arrays (set once, at ``import tensorgrad``)
``ieee``      NumPy's floating-point warnings off while an op    ``TENSORGRAD_FAST_ERRSTATE=0``
              runs, through NumPy's own context variable
============  =================================================  ============================

Nothing else in tensorgrad calls ``ctypes`` or starts threads for speed: an op, the engine or
an optimizer shows at most a one-line call into this package (``threads.over_chunks(...)``,
``threads.matmul(a, b)``, ``axpy(alpha, x, y, scratch)``) and reads the same without it.
This package imports NumPy and the standard library only.
"""
