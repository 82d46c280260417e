"""TensorBoard logs: :class:`SummaryWriter`, PyTorch's ``torch.utils.tensorboard``'s, writing
event files with the ``tensorboard`` package (an optional extra: ``pip install
'tensorgrad[tensorboard]'``; it is imported when a writer is made)::

    from tensorgrad.utils.tensorboard import SummaryWriter

    with SummaryWriter("runs/mlp") as writer:
        writer.add_scalar("train/loss", loss.item(), step)

then ``tensorboard --logdir runs``. The summaries are built as PyTorch's writer builds them
(:mod:`tensorgrad.utils.tensorboard.summary`), so TensorBoard shows them the same way.
"""

from tensorgrad.utils.tensorboard.writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
