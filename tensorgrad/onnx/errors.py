"""The errors of ``tensorgrad.onnx``, named as ``torch.onnx.errors``'s."""

from __future__ import annotations


class OnnxExporterError(RuntimeError):
    """The model cannot be exported as it is (PyTorch's base class of export errors)."""


class UnsupportedOperatorError(OnnxExporterError):
    """The forward pass ran an op that has no ONNX mapping: the export refuses it by name
    instead of writing a graph that computes something else."""


__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]
