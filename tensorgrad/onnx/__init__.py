"""ONNX export: ``tensorgrad.onnx.export(model, args, "model.onnx", ...)``, PyTorch's classic
``torch.onnx.export``, so that a model trained in tensorgrad runs in ONNX Runtime and every
other ONNX consumer.

The graph is built from what tensorgrad records in a forward pass (the same graph backward
walks): :mod:`tensorgrad.onnx.exporter` runs the model on copies of ``args`` that require
grad, under ``tg.enable_grad()``, walks the recorded nodes in recording order and asks
:mod:`tensorgrad.onnx.converters` for each op's ONNX nodes (:mod:`tensorgrad.onnx.modules` for
the modules converted as a whole: embeddings, and recurrent layers as ONNX's LSTM, GRU and
RNN). A second run on other values and sizes (:mod:`tensorgrad.onnx.second_run`) finds what
follows the dynamic axes and refuses constants that came from the inputs. An op without a
mapping raises
:class:`~tensorgrad.onnx.errors.UnsupportedOperatorError` naming the op and the module that
ran it: nothing is ever exported wrong. Needs the ``onnx`` package (``pip install
'tensorgrad[onnx]'``, which brings ONNX Runtime along for checking), imported on first use.
"""

from tensorgrad.onnx.errors import OnnxExporterError, UnsupportedOperatorError
from tensorgrad.onnx.exporter import DEFAULT_OPSET, export, is_in_onnx_export

__all__ = [
    "DEFAULT_OPSET",
    "OnnxExporterError",
    "UnsupportedOperatorError",
    "export",
    "is_in_onnx_export",
]
