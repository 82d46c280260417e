"""The core: the Tensor, the engine that runs and records ops, and the backward sweep.

=====================  =====================================================================
``tensor.py``          the Tensor: attributes, autograd entry points, operators, in place
``math_methods.py``    the math methods' mixin, composed of its families in ``methods/``:
                       pointwise, arithmetic, comparisons, matrices, reductions, sorting,
                       casts
``shape_methods.py``   the shape methods' mixin, composed likewise: views, permutations,
                       splits, indexing
``methods/``           the Tensor's methods, a module per family (its ``__init__`` lists them)
``numpy_protocol.py``  ``np.exp(t)``, ``ndarray + t``, ``np.sum(t, axis=0)``
``args.py``            the naming policy: PyTorch's names, NumPy's spellings accepted
``engine.py``          running and recording ops, versions, views, in-place changes
``sweep.py``           the backward sweep
``creation.py``        ``tg.tensor``, ``zeros``, ``rand``, ...
``generator.py``       ``tg.Generator``, and random states as uint8 tensors
``functions.py``       ``tg.where``, ``tg.cat``, and ``tg.exp(x)`` for ``x.exp()``
=====================  =====================================================================
"""
