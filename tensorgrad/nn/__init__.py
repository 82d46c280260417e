"""Neural-network building blocks, shaped like PyTorch's ``torch.nn``.

import tensorgrad as tg
from tensorgrad import nn
import tensorgrad.nn.functional as F

model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
loss = F.cross_entropy(model(x), y)

Layers live in ``nn.modules`` (one module per family), their stateless functions in
``nn.functional`` (the same families), initialisers in ``nn.init``.
"""

from tensorgrad.nn import functional, init, modules, parallel, utils
from tensorgrad.nn.modules import *  # noqa: F403 - the layers, as torch.nn exports them
from tensorgrad.nn.modules import __all__ as _modules_all
from tensorgrad.nn.parameter import Parameter

__all__ = [*_modules_all, "Parameter", "functional", "init", "modules", "parallel", "utils"]
