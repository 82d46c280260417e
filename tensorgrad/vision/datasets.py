"""MNIST and Fashion-MNIST as torchvision's ``datasets``: same arguments, attributes, items.

``MNIST(root, train=True, transform=None, target_transform=None, download=False)`` reads the
IDX files (gzip-compressed or not) from torchvision's place, ``<root>/MNIST/raw/``, or from
any directory tensorgrad's own loaders search (``<root>/mnist/``, ``<root>/``,
``$TENSORGRAD_DATA``, the per-user cache; see :func:`tensorgrad.data.search_dirs`). With
``download=True`` the missing files are downloaded into ``<root>/MNIST/raw/`` and checked
against their published MD5 checksums.

``ds[i]`` is ``(transform(image), target)``, ``target`` a Python int; the image is the uint8
NumPy array (28, 28) where torchvision gives a PIL image. ``ds.data`` (uint8, (N, 28, 28)) and
``ds.targets`` (int64, (N,)) are Tensors, as in torchvision.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tensorgrad.data.collate import _unwrap
from tensorgrad.data.dataset import Dataset
from tensorgrad.data.datasets import (
    FASHION_MNIST_CLASSES,
    IDX_FILES,
    MD5,
    MIRROR_ENV,
    MIRRORS,
    _file_variants,
    search_dirs,
)
from tensorgrad.data.download import download_file
from tensorgrad.data.errors import DatasetError, DatasetNotFoundError, DownloadError
from tensorgrad.data.idx import read_idx

__all__ = ["MNIST", "FakeData", "FashionMNIST", "MNISTNotFoundError", "VisionDataset"]


def __getattr__(name: str) -> Any:
    message = f"module {__name__!r} has no attribute {name!r}"
    if not name.startswith("__"):
        message += (
            "; of torchvision's datasets, tensorgrad has MNIST, FashionMNIST and FakeData "
            "(see docs/porting.md)"
        )
    raise AttributeError(message)


class MNISTNotFoundError(DatasetNotFoundError, RuntimeError):
    """The files were neither found nor downloaded. A RuntimeError, as torchvision raises, and
    a :class:`tensorgrad.data.DatasetNotFoundError` (a FileNotFoundError)."""


class StandardTransform:
    """``transform`` on the input and ``target_transform`` on the target (torchvision's)."""

    def __init__(
        self,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def __repr__(self) -> str:
        body = [type(self).__name__]
        for head, t in (
            ("Transform: ", self.transform),
            ("Target transform: ", self.target_transform),
        ):
            if t is not None:
                lines = repr(t).splitlines()
                body += [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]
        return "\n".join(body)


class VisionDataset(Dataset):
    """Base class of the vision datasets: a ``root``, a ``transform`` for the inputs and a
    ``target_transform`` for the targets (or ``transforms`` for both at once)."""

    _repr_indent = 4

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        transforms: Callable[[Any, Any], Any] | None = None,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        separate = transform is not None or target_transform is not None
        if transforms is not None and separate:
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as argument"
            )
        self.transform = transform
        self.target_transform = target_transform
        if separate:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {len(self)}"]  # type: ignore[arg-type]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += repr(self.transforms).splitlines()
        indent = " " * self._repr_indent
        return "\n".join([f"Dataset {type(self).__name__}", *(indent + line for line in body)])

    def extra_repr(self) -> str:
        return ""


class MNIST(VisionDataset):
    """MNIST's 60,000 training or 10,000 test images of handwritten digits, 28x28.

    As torchvision's ``datasets.MNIST``; see the module's docstring for where the files are
    looked for and the one difference (images are NumPy arrays, not PIL images).
    """

    _name = "mnist"  # the dataset's key in tensorgrad.data's tables (MD5, MIRRORS)
    mirrors: ClassVar[list[str]] = list(MIRRORS["mnist"])
    resources: ClassVar[list[tuple[str, str]]] = list(MD5["mnist"].items())
    classes: ClassVar[list[str]] = [
        "0 - zero",
        "1 - one",
        "2 - two",
        "3 - three",
        "4 - four",
        "5 - five",
        "6 - six",
        "7 - seven",
        "8 - eight",
        "9 - nine",
    ]

    def __init__(
        self,
        root: str | os.PathLike[str],
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        images_path, labels_path = self._find_files(download)
        images, labels = _read_images(images_path), _read_labels(labels_path, len(self.classes))
        if len(images) != len(labels):
            raise DatasetError(
                images_path,
                f"{len(images)} images, but {labels_path.name} has {len(labels)} labels",
            )
        from tensorgrad import Tensor

        self.data = Tensor(images)
        self.targets = Tensor(labels)
        self.source = str(images_path.parent)

    # --------------------------------------------------------------- torchvision's API
    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.classes)}

    @property
    def train_labels(self) -> Any:
        warnings.warn("train_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def test_labels(self) -> Any:
        warnings.warn("test_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def train_data(self) -> Any:
        warnings.warn("train_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def test_data(self) -> Any:
        warnings.warn("test_data has been renamed data", stacklevel=2)
        return self.data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """``(transform(image), target_transform(target))``: the image a uint8 array (28, 28)
        (torchvision: a PIL image), the target a Python int."""
        if not isinstance(index, int):
            index = _unwrap(index)  # a Tensor index: its array
        img, target = _unwrap(self.data)[index], int(_unwrap(self.targets)[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"

    def download(self) -> None:
        """Download the files missing from ``raw_folder``, verified by their MD5 checksums."""
        target = Path(self.raw_folder)
        mirrors = self._mirror_urls()
        for filename, md5 in self.resources:
            stem = filename.removesuffix(".gz")
            if any((target / name).is_file() for name in _file_variants(stem)):
                continue
            download_file([m + filename for m in mirrors], target / filename, md5, progress=print)

    # --------------------------------------------------------------- the fast path
    @property
    def get_batch(self) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The items at ``indices`` as a batch of arrays, transformed all at once.

        Exists (for :class:`~tensorgrad.data.DataLoader`) when the transform is one that
        :func:`tensorgrad.vision.transforms.batched` can apply to a whole batch (none, or
        ``ToTensor()`` then ``Normalize``) and there is no target transform: 60,000 images
        an epoch are then converted by a few array operations a batch instead of 60,000
        Python calls. Otherwise an AttributeError, and the loader reads item by item.
        """
        from tensorgrad.vision.transforms import batched

        apply = batched(self.transform) if self.target_transform is None else None
        if apply is None:
            raise AttributeError(
                f"{type(self).__name__}.get_batch: the transform {self.transform!r} (or a "
                "target_transform) is applied item by item"
            )

        def get_batch(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            images = apply(np.asarray(_unwrap(self.data))[indices])
            return images, np.asarray(_unwrap(self.targets))[indices].astype(np.int64)

        return get_batch

    # --------------------------------------------------------------- finding the files
    def _split_stems(self) -> tuple[str, str]:
        split = "train" if self.train else "test"
        return IDX_FILES[f"{split}_images"], IDX_FILES[f"{split}_labels"]

    def _search(self) -> list[Path]:
        found, seen = [], set()
        for path in [Path(self.raw_folder), *search_dirs(self._name, self.root)]:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                found.append(path)
        return found

    def _find_files(self, download: bool) -> tuple[Path, Path]:
        searched = self._search()
        for directory in searched:
            files = _files_in(directory, self._split_stems())
            if files is not None:
                return files
        note = "Downloading was turned off (download=False)."
        if download:
            try:
                self.download()
            except DownloadError as exc:
                note = f"Download into {self.raw_folder} failed: {exc}"
            else:
                files = _files_in(Path(self.raw_folder), self._split_stems())
                if files is not None:
                    return files
        raise MNISTNotFoundError(self._not_found(searched, note), searched, note)

    def _mirror_urls(self) -> list[str]:
        env = os.environ.get(MIRROR_ENV[self._name], "")
        mirrors = env.replace(",", " ").split() if env.strip() else self.mirrors
        return [m if m.endswith("/") else m + "/" for m in mirrors]

    def _not_found(self, searched: list[Path], note: str) -> str:
        names = ", ".join(f"{stem}.gz" for stem in self._split_stems())
        lines = [
            "Dataset not found. You can use download=True to download it.",
            f"{type(self).__name__} looked for {names} (or the same without .gz) in:",
            *(f"  {path}" for path in searched),
            note,
            f"Put the files in {self.raw_folder}/ (torchvision's place) or in any directory "
            f"above, or set TENSORGRAD_DATA=/path/to/data with the files in "
            f"/path/to/data/{self._name}/.",
        ]
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST, as torchvision's ``datasets.FashionMNIST``: 28x28 images of
    clothing in ten classes, with MNIST's sizes and file names."""

    _name = "fashion-mnist"
    mirrors: ClassVar[list[str]] = list(MIRRORS["fashion-mnist"])
    resources: ClassVar[list[tuple[str, str]]] = list(MD5["fashion-mnist"].items())
    classes: ClassVar[list[str]] = list(FASHION_MNIST_CLASSES)


def _files_in(directory: Path, stems: tuple[str, ...]) -> tuple[Path, Path] | None:
    """The files named ``stems`` (in any accepted spelling) in ``directory``, if all are."""
    paths = []
    for stem in stems:
        path = next(
            (directory / n for n in _file_variants(stem) if (directory / n).is_file()), None
        )
        if path is None:
            return None
        paths.append(path)
    return paths[0], paths[1]


def _read_images(path: Path) -> np.ndarray:
    array = read_idx(path)
    if array.ndim != 3:
        raise DatasetError(path, f"expected images of shape (N, H, W), got {array.shape}")
    if array.dtype != np.uint8:
        raise DatasetError(path, f"expected unsigned byte pixels, got {array.dtype}")
    return array


def _read_labels(path: Path, num_classes: int) -> np.ndarray:
    array = read_idx(path)
    if array.ndim != 1:
        raise DatasetError(path, f"expected a 1-d array of labels, got shape {array.shape}")
    if array.dtype != np.uint8:
        raise DatasetError(path, f"expected unsigned byte labels, got {array.dtype}")
    if array.size and int(array.max()) >= num_classes:
        raise DatasetError(path, f"label {int(array.max())} out of range for {num_classes} classes")
    return array.astype(np.int64)


class FakeData(VisionDataset):
    """Random images and labels, torchvision's ``FakeData`` (for trying a pipeline or a GAN
    without data): ``size`` items, each a uint8 image of ``image_size`` (C, H, W) given as an
    (H, W, C) NumPy array ((H, W) for one channel), where torchvision gives a PIL image, and
    a Python int label in ``[0, num_classes)``.

    Item ``i`` is drawn from a generator seeded with ``i + random_offset``, so it is the same
    every time it is read and the global generator is left as it was (torchvision seeds and
    restores the global one); the pixels are not torchvision's (NumPy's stream).
    """

    def __init__(
        self,
        size: int = 1000,
        image_size: tuple[int, int, int] = (3, 224, 224),
        num_classes: int = 10,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        random_offset: int = 0,
    ) -> None:
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        rng = np.random.default_rng(int(index) + self.random_offset)
        image = rng.standard_normal(tuple(self.image_size))
        target = int(rng.integers(0, self.num_classes))
        # torchvision's ToPILImage of a float tensor: pixel = byte(255 · value), wrapping
        pixels = (np.trunc(image * 255).astype(np.int64) & 255).astype(np.uint8)
        pixels = (
            pixels[0] if pixels.shape[0] == 1 else np.ascontiguousarray(pixels.transpose(1, 2, 0))
        )
        if self.transform is not None:
            pixels = self.transform(pixels)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return pixels, target

    def __len__(self) -> int:
        return self.size
