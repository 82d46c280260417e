"""tensorgrad.utils.tensorboard.SummaryWriter: event files that TensorBoard's own reader
reads back as written, the same as PyTorch's writer writes them."""

from __future__ import annotations

import os
import struct
import time
import zlib

import numpy as np
import pytest

import tensorgrad as tg

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator

from tensorgrad.utils.tensorboard import SummaryWriter


def read(log_dir):
    """Everything in ``log_dir``'s event files, by TensorBoard's accumulator."""
    everything = {kind: 0 for kind in event_accumulator.DEFAULT_SIZE_GUIDANCE}
    accumulator = event_accumulator.EventAccumulator(str(log_dir), size_guidance=everything)
    return accumulator.Reload()


def decode_png(data):
    """The pixels of a PNG written without filters (what the writer writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert depth == 8 and not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels)


def write_everything(writer_type, log_dir):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal(500).astype(np.float32)
    with writer_type(log_dir) as writer:
        for step in range(5):
            writer.add_scalar("train/loss", 1.0 / (step + 1), step)
        writer.add_scalar("train/lr", np.float32(0.5), 5)
        writer.add_scalars("curves", {"a": 1.0, "b": 2.0}, 3)
        writer.add_histogram("weights", weights, 2)
        writer.add_histogram("weights10", weights, 2, bins=10)
        writer.add_image("picture", np.linspace(0, 1, 3 * 4 * 5).reshape(3, 4, 5), 1)
        writer.add_image("gray", np.arange(12, dtype=np.uint8).reshape(3, 4) * 20, 1,
                         dataformats="HW")  # fmt: skip
        writer.add_text("note", "hello, **TensorBoard**", 7)
        writer.add_hparams({"lr": 0.1, "optimizer": "adamw", "shift": True, "skip": None},
                           {"hparam/accuracy": 0.9}, run_name="trial")  # fmt: skip
    return weights


def test_events_read_back_as_written(tmp_path):
    weights = write_everything(SummaryWriter, tmp_path)
    run = read(tmp_path)
    loss = run.Scalars("train/loss")
    assert [e.step for e in loss] == list(range(5))
    np.testing.assert_allclose([e.value for e in loss], [1.0, 0.5, 1 / 3, 0.25, 0.2], rtol=1e-6)
    assert run.Scalars("train/lr")[0].value == 0.5
    (histogram,) = run.Histograms("weights")
    h = histogram.histogram_value
    assert histogram.step == 2 and h.num == 500
    np.testing.assert_allclose([h.min, h.max, h.sum], [weights.min(), weights.max(), weights.sum()],
                               rtol=1e-5)  # fmt: skip
    assert sum(h.bucket) == 500 and len(h.bucket) == len(h.bucket_limit)
    assert list(h.bucket_limit) == sorted(h.bucket_limit)
    (ten,) = run.Histograms("weights10")
    counts, _ = np.histogram(weights.astype(float), bins=10)
    assert list(ten.histogram_value.bucket) == [0, *counts.tolist()]
    (picture,) = run.Images("picture")
    assert (picture.width, picture.height, picture.step) == (5, 4, 1)
    expected = (np.linspace(0, 1, 60).reshape(3, 4, 5).transpose(1, 2, 0) * 255).astype(np.uint8)
    np.testing.assert_array_equal(decode_png(picture.encoded_image_string), expected)
    (gray,) = run.Images("gray")
    pixels = decode_png(gray.encoded_image_string)
    np.testing.assert_array_equal(pixels[..., 0], np.arange(12).reshape(3, 4) * 20)
    assert (pixels[..., 0] == pixels[..., 2]).all()
    (note,) = run.Tensors("note/text_summary")
    assert note.step == 7 and note.tensor_proto.string_val == [b"hello, **TensorBoard**"]
    assert "note/text_summary" in run.PluginTagToContent("text")
    curves = read(tmp_path / "curves_a")
    assert curves.Scalars("curves")[0].value == 1.0 and curves.Scalars("curves")[0].step == 3
    assert read(tmp_path / "curves_b").Scalars("curves")[0].value == 2.0

    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    trial = read(tmp_path / "trial")
    content = trial.PluginTagToContent("hparams")
    start = HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert start.session_start_info.hparams["lr"].number_value == 0.1
    assert start.session_start_info.hparams["optimizer"].string_value == "adamw"
    assert start.session_start_info.hparams["shift"].bool_value is True
    assert "skip" not in start.session_start_info.hparams
    experiment = HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy"]
    assert trial.Scalars("hparam/accuracy")[0].value == pytest.approx(0.9)


def test_the_same_as_pytorchs_writer(tmp_path):
    torch_board = pytest.importorskip("torch.utils.tensorboard")
    write_everything(SummaryWriter, tmp_path / "ours")
    write_everything(torch_board.SummaryWriter, tmp_path / "theirs")
    ours, theirs = read(tmp_path / "ours"), read(tmp_path / "theirs")
    assert ours.Tags()["scalars"] == theirs.Tags()["scalars"]
    assert ours.Tags()["histograms"] == theirs.Tags()["histograms"]
    assert ours.Tags()["tensors"] == theirs.Tags()["tensors"]
    for tag in ours.Tags()["scalars"]:
        assert [(e.step, e.value) for e in ours.Scalars(tag)] == [
            (e.step, e.value) for e in theirs.Scalars(tag)
        ]
    for tag in ours.Tags()["histograms"]:
        a, b = ours.Histograms(tag)[0].histogram_value, theirs.Histograms(tag)[0].histogram_value
        assert list(a.bucket) == list(b.bucket)
        np.testing.assert_allclose(a.bucket_limit, b.bucket_limit)
    for tag in ("picture", "gray"):
        a, b = ours.Images(tag)[0], theirs.Images(tag)[0]
        assert (a.width, a.height) == (b.width, b.height)

    def runs(directory):  # the sub-directories: add_scalars' series, add_hparams' run
        return sorted(p.name for p in directory.iterdir() if p.is_dir())

    assert runs(tmp_path / "ours") == runs(tmp_path / "theirs") == ["curves_a", "curves_b", "trial"]


def test_default_log_dir_comment_purge_step_and_reopening(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    assert writer.get_logdir().startswith("runs" + os.sep) and writer.log_dir.endswith("_lr0.1")
    writer.add_scalar("x", tg.tensor(3.0), 0)
    writer.close()
    writer.add_scalar("x", tg.tensor([4.0]), 1)  # a closed writer opens a new file
    writer.close()
    assert [e.value for e in read(writer.log_dir).Scalars("x")] == [3.0, 4.0]

    log = tmp_path / "resumed"
    with SummaryWriter(log) as first:
        for step in range(10):
            first.add_scalar("loss", float(step), step)
    # event files are read in the order of their names, which start with the second they
    # were made in (then a counter of the process's writers, not zero-padded): the resumed
    # run's file must come from a later second to sort after the first's, as it would
    time.sleep(1.05 - time.time() % 1)
    with SummaryWriter(log, purge_step=6) as second:  # a run resumed from its step-6 checkpoint
        for step in range(6, 8):
            second.add_scalar("loss", 100.0 + step, step)
    values = [(e.step, e.value) for e in read(log).Scalars("loss")]
    assert values == [(s, float(s)) for s in range(6)] + [(6, 106.0), (7, 107.0)]


def test_bad_values_are_refused_by_name(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match="'loss' needs one value"):
            writer.add_scalar("loss", np.ones(3))
        with pytest.raises(ValueError, match="NaN or infinite"):
            writer.add_histogram("w", np.array([1.0, np.nan]))
        with pytest.raises(ValueError, match="has no values"):
            writer.add_histogram("w", np.zeros(0))
        with pytest.raises(ValueError, match="does not match dataformats"):
            writer.add_image("img", np.zeros((4, 5)))
        with pytest.raises(TypeError, match="should be dictionary"):
            writer.add_hparams([("lr", 1)], {})
        with pytest.raises(TypeError, match="expected a Tensor"):
            writer.add_scalar("loss", "1.0")


def test_a_missing_tensorboard_names_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto", None)
    with pytest.raises(ImportError, match=r"pip install 'tensorgrad\[tensorboard\]'"):
        SummaryWriter(tmp_path)
