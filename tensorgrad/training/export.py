"""``tensorgrad export``: a classifier written by ``train --save`` (or a training checkpoint) as
an ONNX model, for ONNX Runtime and the other ONNX consumers.

The model is rebuilt from the file (as ``evaluate`` rebuilds it), put in eval mode and
exported with :func:`tensorgrad.onnx.export`, with a dynamic batch axis: input ``images``
(standardised images, shaped as the model takes them: ``(N, H·W)`` for the MLP,
``(N, 1, H, W)`` for the CNN), output ``logits`` ``(N, classes)``. The model's metadata
(``metadata_props``) says how to standardise pixels in [0, 1]: ``(x − mean) / std``, and names
the classes.
"""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

import numpy as np


def register(subparsers: Any) -> None:
    """Add ``export`` to the ``tensorgrad`` command line."""
    from tensorgrad.training.commands import _output

    parser = subparsers.add_parser(
        "export",
        help="export a trained classifier to ONNX",
        description="Export a model written by `tensorgrad train --save` (or --checkpoint) as "
        "an ONNX model with a dynamic batch axis (needs the onnx extra: pip install "
        "'tensorgrad[onnx]').",
    )
    parser.add_argument("--checkpoint", required=True, metavar="FILE", help="the trained model")
    parser.add_argument("--onnx", required=True, metavar="FILE", type=_output, help="output")
    parser.add_argument(
        "--opset", type=int, default=None, metavar="N", help="ONNX opset (default: 17)"
    )
    parser.set_defaults(func=_run_export, parser=parser)


def onnx_metadata(config: dict[str, Any]) -> dict[str, str]:
    """What a user of the ONNX file needs to feed it: the preprocessing and the classes."""
    return {
        "tensorgrad.model": str(config["model"]),
        "tensorgrad.dataset": str(config["dataset"]),
        "preprocessing": "pixels in [0, 1], then (x - mean) / std",
        "mean": repr(float(config["mean"])),
        "std": repr(float(config["std"])),
        "classes": json.dumps(list(config.get("classes") or range(config["num_classes"]))),
    }


def export_classifier(checkpoint: str, path: str, opset: int | None = None) -> str:
    """Export the classifier in ``checkpoint`` to ``path``; returns a line that says what."""
    import tensorgrad as tg
    from tensorgrad.onnx import export
    from tensorgrad.onnx.exporter import onnx_package
    from tensorgrad.serialization import write_atomically
    from tensorgrad.training.evaluate import model_from_file
    from tensorgrad.training.models import MODELS

    onnx = onnx_package()
    model, config = model_from_file(checkpoint)
    model.eval()
    example = MODELS[config["model"]].inputs(
        np.zeros((1, *config["image_shape"]), dtype=np.float32)
    )
    buffer = io.BytesIO()
    export(model, tg.tensor(example), buffer, input_names=["images"], output_names=["logits"],
           dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
           opset_version=opset)  # fmt: skip
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.helper.set_model_props(proto, onnx_metadata(config))
    write_atomically(path, proto.SerializeToString())
    shape = "x".join(["N", *map(str, example.shape[1:])])
    return (
        f"exported {config['model']} ({config['dataset']}) to {path}: input 'images' {shape} "
        f"(pixels in [0, 1], standardised: (x - {float(config['mean']):.4f}) / "
        f"{float(config['std']):.4f}), output 'logits' Nx{config['num_classes']}"
    )


def _run_export(args: argparse.Namespace) -> int:
    from tensorgrad.onnx import OnnxExporterError
    from tensorgrad.serialization import CheckpointError
    from tensorgrad.training.commands import _fail

    try:
        print(export_classifier(args.checkpoint, args.onnx, args.opset))
    except ImportError as exc:
        return _fail(str(exc))
    except (CheckpointError, OnnxExporterError, ValueError, OSError) as exc:
        return _fail(str(exc))
    return 0
