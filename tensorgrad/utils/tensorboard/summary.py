"""The ``Summary`` protocol buffers a :class:`~tensorgrad.utils.tensorboard.SummaryWriter`
writes, built as PyTorch's ``torch.utils.tensorboard.summary`` builds them: scalars as
``simple_value``, histograms as ``HistogramProto`` (TensorBoard's bucket layout), images as
PNG, text for the text plugin, hyperparameters for the hparams plugin.

Images are encoded to PNG here (zlib and a few chunks), so no imaging library is needed.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

EXTRA = "tensorboard"


def protos() -> Any:
    """The tensorboard package's protocol buffer modules, or an ImportError naming the extra."""
    try:
        from tensorboard.compat.proto import summary_pb2
    except ImportError as exc:
        raise ImportError(
            "tensorgrad.utils.tensorboard needs the tensorboard package: "
            f"pip install 'tensorgrad[{EXTRA}]' (or pip install tensorboard)"
        ) from exc
    return summary_pb2


def make_np(value: Any) -> np.ndarray:
    """A Tensor, an array or a Python number as an array."""
    data = getattr(value, "_data", None)
    if isinstance(data, np.ndarray) and hasattr(value, "numpy"):
        return value.numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (int, float, bool, np.generic)):
        return np.asarray(value)
    raise TypeError(f"expected a Tensor, an array or a number, got {type(value).__name__}")


def scalar(tag: str, value: Any) -> Any:
    pb = protos()
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise ValueError(f"add_scalar: {tag!r} needs one value, got shape {make_np(value).shape}")
    return pb.Summary(value=[pb.Summary.Value(tag=tag, simple_value=float(array))])


def default_bins() -> list[float]:
    """TensorBoard's (and TensorFlow's) histogram buckets: ±1e-12 · 1.1^k up to 1e20, and 0."""
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0.0] + buckets


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> Any:
    pb = protos()
    values = make_np(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError(f"add_histogram: {tag!r} has no values")
    if not np.isfinite(values).all():
        raise ValueError(f"add_histogram: {tag!r} holds NaN or infinite values")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbouring bins
        step = -(-len(counts) // max_bins)
        counts = np.pad(counts, (0, -len(counts) % step)).reshape(-1, step).sum(axis=1)
        limits = np.append(limits[:-1:step], limits[-1])
    # TensorBoard reads each bucket's right edge: keep the bins from the one before the first
    # non-empty bin (or an empty one added, whose right edge is the left edge) to the last
    # non-empty one
    nonzero = np.flatnonzero(counts)
    if not nonzero.size:
        raise ValueError(f"add_histogram: no value of {tag!r} falls into the bins")
    start, end = int(nonzero[0]), int(nonzero[-1]) + 1
    counts = counts[start - 1 : end] if start > 0 else np.concatenate([[0], counts[:end]])
    edges = limits[start : end + 1]
    histo = pb.HistogramProto(
        min=float(values.min()),
        max=float(values.max()),
        num=int(values.size),
        sum=float(values.sum()),
        sum_squares=float(values.dot(values)),
        bucket_limit=edges.tolist(),
        bucket=counts.tolist(),
    )
    return pb.Summary(value=[pb.Summary.Value(tag=tag, histo=histo)])


def _grid(nchw: np.ndarray, columns: int = 8) -> np.ndarray:
    """Images (N, C, H, W) side by side, ``columns`` to a row, as one (C, H', W') image."""
    if nchw.shape[1] == 1:
        nchw = np.repeat(nchw, 3, axis=1)
    n, c, h, w = nchw.shape
    columns = min(n, columns)
    rows = -(-n // columns)
    grid = np.zeros((c, h * rows, w * columns), dtype=nchw.dtype)
    for i in range(n):
        r, k = divmod(i, columns)
        grid[:, r * h : (r + 1) * h, k * w : (k + 1) * w] = nchw[i]
    return grid


def to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """An image in ``dataformats`` (``CHW``, ``HWC``, ``HW``, ``NCHW``, ...) as (H, W, C)."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or set(fmt) - set("NCHW"):
        raise ValueError(f"add_image: dataformats must be letters of NCHW, got {dataformats!r}")
    if array.ndim != len(fmt):
        raise ValueError(
            f"add_image: an image of shape {array.shape} does not match dataformats {dataformats!r}"
        )
    if len(fmt) == 4:
        return _grid(array.transpose([fmt.index(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        if "C" not in fmt or "H" not in fmt or "W" not in fmt:
            raise ValueError(f"add_image: dataformats {dataformats!r} needs C, H and W")
        hwc = array.transpose([fmt.index(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.repeat(hwc, 3, axis=2)
        if hwc.shape[2] not in (3, 4):
            raise ValueError(f"add_image: expected 1, 3 or 4 channels, got {hwc.shape[2]}")
        return hwc
    if fmt not in ("HW", "WH"):
        raise ValueError(f"add_image: a 2-D image needs dataformats 'HW' or 'WH', got {fmt!r}")
    return np.repeat(array.transpose([fmt.index(c) for c in "HW"])[:, :, None], 3, axis=2)


def encode_png(hwc: np.ndarray) -> bytes:
    """A (H, W, C) uint8 image (C: 3 or 4) as PNG bytes."""
    height, width, channels = hwc.shape
    color_type = {3: 2, 4: 6}[channels]
    rows = np.concatenate([np.zeros((height, 1), np.uint8), hwc.reshape(height, -1)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(np.ascontiguousarray(rows).tobytes()))
        + chunk(b"IEND", b"")
    )


def image(tag: str, values: Any, dataformats: str = "CHW") -> Any:
    """Floats are taken as [0, 1] and uint8 as [0, 255], as PyTorch's (clipped)."""
    pb = protos()
    array = make_np(values)
    hwc = to_hwc(array, dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    pixels = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    picture = pb.Summary.Image(
        height=pixels.shape[0],
        width=pixels.shape[1],
        colorspace=pixels.shape[2],
        encoded_image_string=encode_png(pixels),
    )
    return pb.Summary(value=[pb.Summary.Value(tag=tag, image=picture)])


def text(tag: str, string: str) -> Any:
    pb = protos()
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    plugin = pb.SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()
    )
    tensor = TensorProto(
        dtype="DT_STRING",
        string_val=[str(string).encode("utf-8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    return pb.Summary(
        value=[
            pb.Summary.Value(
                tag=f"{tag}/text_summary",
                metadata=pb.SummaryMetadata(plugin_data=plugin),
                tensor=tensor,
            )
        ]
    )


def hparams(
    hparam_dict: Mapping[str, Any],
    metric_dict: Mapping[str, Any],
    hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
) -> tuple[Any, Any, Any]:
    """The experiment, session-start and session-end summaries of the hparams plugin."""
    pb = protos()
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    domains = dict(hparam_domain_discrete or {})
    for name, values in domains.items():
        if name not in hparam_dict or not all(
            isinstance(v, type(hparam_dict[name])) for v in values
        ):
            raise TypeError(
                f"add_hparams: hparam_domain_discrete[{name!r}] should be a list of the type of "
                f"hparam_dict[{name!r}]"
            )
    start = SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, bool):
            start.hparams[name].bool_value = value
            kind, field = "DATA_TYPE_BOOL", "bool_value"
        elif isinstance(value, str):
            start.hparams[name].string_value = value
            kind, field = "DATA_TYPE_STRING", "string_value"
        elif isinstance(value, (int, float, np.generic)) or hasattr(value, "_data"):
            start.hparams[name].number_value = float(make_np(value).reshape(-1)[0])
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        else:
            raise ValueError(
                f"add_hparams: {name!r} must be an int, float, str, bool or Tensor, got "
                f"{type(value).__name__}"
            )
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(
                values=[struct_pb2.Value(**{field: v}) for v in domains[name]]
            )
        infos.append(HParamInfo(name=name, type=DataType.Value(kind), domain_discrete=domain))

    def wrapped(tag: str, **content: Any) -> Any:
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        plugin = pb.SummaryMetadata.PluginData(
            plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()
        )
        return pb.Summary(
            value=[pb.Summary.Value(tag=tag, metadata=pb.SummaryMetadata(plugin_data=plugin))]
        )

    experiment = Experiment(
        hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict]
    )
    return (
        wrapped(metadata.EXPERIMENT_TAG, experiment=experiment),
        wrapped(metadata.SESSION_START_INFO_TAG, session_start_info=start),
        wrapped(
            metadata.SESSION_END_INFO_TAG,
            session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS")),
        ),
    )
