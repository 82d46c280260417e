"""PyTorch's names that tensorgrad answers for ported programs, with nothing behind them.

A ported program asks ``torch.cuda.is_available()``, sets ``torch.backends.cudnn.deterministic``
or reads ``torch.bfloat16``; these modules give PyTorch's answers for a CPU-only library, so
that the program runs on (or fails with an error that names what is missing and points at
docs/porting.md):

====================  ======================================================================
``cuda.py``           ``torch.cuda``: no devices, seeding accepted, the rest refused by name
``accelerator.py``    ``torch.accelerator``: no accelerator
``backends/``         ``torch.backends``: cudnn, cuda, mps and cpu switches, settable, inert
``amp.py``            ``torch.amp``/``torch.cuda.amp``: ``GradScaler``, ``autocast(enabled=False)``
``unsupported.py``    ``torch.compile``, ...: errors that name them; ``torch.bfloat16``, ...:
                      placeholders refused when a tensor is made with one
====================  ======================================================================

Ported code reaches them at PyTorch's paths: ``import tensorgrad`` registers ``cuda``,
``accelerator`` and ``backends`` (with its submodules) as ``tensorgrad.cuda``,
``tensorgrad.accelerator`` and ``tensorgrad.backends`` (the same module objects, a few small
modules), so that ``import tensorgrad.cuda`` and ``from tensorgrad.backends import cudnn``
port as written. ``unsupported`` loads on first use of a name it answers.
"""
