"""``SummaryWriter``: PyTorch's ``torch.utils.tensorboard.SummaryWriter``, on the tensorboard
package's own event-file writer (``EventFileWriter``: a background thread, ``max_queue``
events buffered, a flush every ``flush_secs`` seconds)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tensorgrad.utils.tensorboard import summary as summaries


class FileWriter:
    """Writes ``Event`` protocol buffers into one event file in ``log_dir`` (PyTorch's)."""

    def __init__(
        self, log_dir: str | os.PathLike, max_queue: int = 10, flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:  # fmt: skip
        summaries.protos()  # the ImportError naming the extra, before anything is made
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Any, step: int | None = None, walltime: float | None = None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(
        self, summary: Any, global_step: int | None = None, walltime: float | None = None
    ) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir`` (default
    ``runs/<date>_<host><comment>``), as PyTorch's ``SummaryWriter`` does.

    ``purge_step`` marks a restart (a run resumed from a checkpoint at that step): TensorBoard
    hides events of earlier runs in this directory from that step on. Writing happens on a
    background thread; :meth:`flush` writes what is pending, :meth:`close` (or leaving a
    ``with`` block) writes it and closes the files. A closed writer opens new files when used
    again."""

    def __init__(
        self,
        log_dir: str | os.PathLike | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:
        if not log_dir:
            import socket
            from datetime import datetime

            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self.default_bins = summaries.default_bins()
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The writer of ``log_dir`` (made again after :meth:`close`)."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(
                self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix
            )
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                from tensorboard.compat.proto.event_pb2 import Event, SessionLog

                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=step, session_log=SessionLog(status=SessionLog.START))
                )
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    # ----------------------------------------------------------------- what can be logged
    def add_scalar(
        self, tag: str, scalar_value: Any, global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:  # fmt: skip
        """One value (a number, or a Tensor or array of one element) of the series ``tag``."""
        self._get_file_writer().add_summary(
            summaries.scalar(tag, scalar_value), global_step, walltime
        )

    def add_scalars(
        self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:  # fmt: skip
        """Several series in one chart: each goes to its own run, ``log_dir/<main_tag>_<tag>``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, value in tag_scalar_dict.items():
            directory = f"{root}/{main_tag.replace('/', '_')}_{tag}"
            writer = self.all_writers.get(directory)
            if writer is None:
                writer = FileWriter(
                    directory, self.max_queue, self.flush_secs, self.filename_suffix
                )
                self.all_writers[directory] = writer
            writer.add_summary(summaries.scalar(main_tag, value), global_step, walltime)

    def add_histogram(
        self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
        walltime: float | None = None, max_bins: int | None = None,
    ) -> None:  # fmt: skip
        """The distribution of ``values``; ``bins`` as NumPy's ``histogram`` takes them, or
        ``"tensorflow"`` for TensorBoard's own buckets."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(
            summaries.histogram(tag, values, bins, max_bins), global_step, walltime
        )

    def add_image(
        self, tag: str, img_tensor: Any, global_step: int | None = None,
        walltime: float | None = None, dataformats: str = "CHW",
    ) -> None:  # fmt: skip
        """An image, (3, H, W) by default (``dataformats``: ``HWC``, ``HW``, ...); floats in
        [0, 1], uint8 in [0, 255]."""
        self._get_file_writer().add_summary(
            summaries.image(tag, img_tensor, dataformats), global_step, walltime
        )

    def add_images(
        self, tag: str, img_tensor: Any, global_step: int | None = None,
        walltime: float | None = None, dataformats: str = "NCHW",
    ) -> None:  # fmt: skip
        """A batch of images, shown side by side in one picture."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_text(
        self, tag: str, text_string: str, global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:  # fmt: skip
        self._get_file_writer().add_summary(summaries.text(tag, text_string), global_step, walltime)

    def add_hparams(
        self,
        hparam_dict: Mapping[str, Any],
        metric_dict: Mapping[str, Any],
        hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
    ) -> None:
        """Hyperparameters and the metrics they gave, for the HParams dashboard: written to a
        run of their own, ``log_dir/<run_name>`` (default: the time), as PyTorch's."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, start, end = summaries.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        directory = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=directory) as writer:
            file_writer = writer._get_file_writer()
            for part in (experiment, start, end):
                file_writer.add_summary(part, global_step)
            for tag, value in metric_dict.items():
                writer.add_scalar(tag, value, global_step)

    # ----------------------------------------------------------------- files
    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file (a later ``add_*`` opens new ones)."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
