"""The Tensor's methods, one module per family, each with the helpers only it uses beside it
(``common.py`` holds what several share). ``core/math_methods.py`` and
``core/shape_methods.py`` compose them into the two mixins the Tensor inherits.

=================== ===========================================================
``pointwise.py``    exp, log, sqrt, trigonometric and special functions, relu,
                    softmax, clamp, rounding, and their in-place forms
``arithmetic.py``   add, sub, div (rounding modes), remainder, fmod, and the other
                    two-operand math: atan2, hypot, xlogy, logaddexp, lerp, ...
``comparisons.py``  eq, lt, ..., isnan, isclose, equal, logical and bitwise ops,
                    where, masked_fill
``matrices.py``     matmul, mm, bmm, dot, mv, outer, kron, addmm, ..., trace,
                    tril, triu, cross
``reductions.py``   sum, mean, prod, var, std, norm, max, min, argmax, any, all,
                    nansum, and the scans: cumsum, cumprod, cummax, ...
``sorting.py``      sort, argsort, topk, median, kthvalue, unique, bincount,
                    nonzero
``casts.py``        to, astype, type, type_as, float, long, ...
``views.py``        reshape, view, flatten, squeeze, unsqueeze, expand, repeat,
                    tile
``permutations.py`` permute, transpose, T, mT, movedim, flip, roll, rot90,
                    diagonal, diag
``splits.py``       split, chunk, tensor_split, unbind, narrow
``indexing.py``     ``t[index]``, gather, scatter, index_select, index_add, ...,
                    take, masked_select, masked_scatter
``compositions.py`` PyTorch's aliases and small compositions: greater, ger,
                    adjoint, positive, addcmul, addcdiv, select, diff, dist,
                    sum_to_size, is_complex, conj, ...
``common.py``       what several families share: operands' raw values, PyTorch's
                    float-only and no-bool policy, the ``(values, indices)`` type
=================== ===========================================================
"""
