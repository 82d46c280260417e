"""Optimizers and learning-rate schedules, shaped like PyTorch's ``torch.optim``.

opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=1000)
loss.backward(); opt.step(); sched.step(); opt.zero_grad()
"""

from tensorgrad.optim import lr_scheduler
from tensorgrad.optim.adadelta import Adadelta
from tensorgrad.optim.adagrad import Adagrad
from tensorgrad.optim.adam import Adam, AdamW
from tensorgrad.optim.lbfgs import LBFGS
from tensorgrad.optim.optimizer import Optimizer
from tensorgrad.optim.rmsprop import RMSprop
from tensorgrad.optim.sgd import SGD

__all__ = [
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Optimizer",
    "RMSprop",
    "lr_scheduler",
]
