"""MNIST, Fashion-MNIST and scikit-learn's 8x8 digits: found on disk, downloaded, or bundled.

MNIST and Fashion-MNIST are looked for, in order, under an explicit ``root``, under the
directory named by ``TENSORGRAD_DATA``, in the per-user cache (``$XDG_CACHE_HOME/tensorgrad``
or ``~/.cache/tensorgrad``) and, for Fashion-MNIST, in Debian's system location. In each of
these roots the four IDX files may be in ``<root>/<dataset>/``, in torchvision's
``<root>/<Dataset>/raw/``, or directly in ``<root>/``. When none has all four, they are
downloaded from the mirrors into the first root, verified against their published MD5
checksums. The digits dataset ships inside scikit-learn and is always available.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tensorgrad.data.download import DEFAULT_TIMEOUT, download_file
from tensorgrad.data.errors import DatasetError, DatasetNotFoundError, DownloadError
from tensorgrad.data.idx import read_idx

__all__ = [
    "DATASET_NAMES",
    "DATA_ENV",
    "FASHION_MNIST_CLASSES",
    "IDX_FILES",
    "MD5",
    "MIRRORS",
    "MIRROR_ENV",
    "SYSTEM_DIRS",
    "LoadedDataset",
    "cache_dir",
    "load_dataset",
    "load_digits",
    "load_fashion_mnist",
    "load_mnist",
    "search_dirs",
]

#: The names :func:`load_dataset` accepts.
DATASET_NAMES = ("auto", "mnist", "fashion-mnist", "digits")

#: Environment variable naming a data root, searched after an explicit ``root``.
DATA_ENV = "TENSORGRAD_DATA"

#: The four IDX files of MNIST and Fashion-MNIST (without ``.gz``), by role.
IDX_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}

#: Download mirrors (base URLs), tried in order. Overridden by the ``mirrors`` argument or,
#: as a space- or comma-separated list, by the environment variable in :data:`MIRROR_ENV`.
MIRRORS: dict[str, tuple[str, ...]] = {
    "mnist": (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ),
    "fashion-mnist": ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
}

MIRROR_ENV = {
    "mnist": "TENSORGRAD_MNIST_MIRROR",
    "fashion-mnist": "TENSORGRAD_FASHION_MNIST_MIRROR",
}

#: Published MD5 checksums of the gzip files, checked on every download (not on local files:
#: those are validated by the IDX reader, so a re-compressed copy is fine).
MD5: dict[str, dict[str, str]] = {
    "mnist": {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    },
    "fashion-mnist": {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    },
}

#: Directories searched last, as they are (Debian's ``dataset-fashion-mnist`` package).
SYSTEM_DIRS: dict[str, tuple[Path, ...]] = {
    "mnist": (),
    "fashion-mnist": (Path("/usr/share/datasets/fashion-mnist"),),
}

FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
_DIGIT_CLASSES = tuple(str(d) for d in range(10))

# Per dataset: its display name, its sub-directories in a root (the first is where downloads
# go), and its classes.
_TITLES = {"mnist": "MNIST", "fashion-mnist": "Fashion-MNIST"}
_SUBDIRS = {"mnist": ("mnist", "MNIST/raw"), "fashion-mnist": ("fashion-mnist", "FashionMNIST/raw")}
_CLASSES = {"mnist": _DIGIT_CLASSES, "fashion-mnist": FASHION_MNIST_CLASSES}


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedDataset:
    """Both splits of a dataset, images float32 in [0, 1] shaped (N, H, W), labels int64.

    ``source`` says where the data came from; ``notice`` is set when ``auto`` fell back to
    the digits dataset, and says why.
    """

    name: str
    train_images: np.ndarray = dataclasses.field(repr=False)
    train_labels: np.ndarray = dataclasses.field(repr=False)
    test_images: np.ndarray = dataclasses.field(repr=False)
    test_labels: np.ndarray = dataclasses.field(repr=False)
    classes: tuple[str, ...]
    source: str
    notice: str | None = None

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def cache_dir() -> Path:
    """The per-user cache root: ``$XDG_CACHE_HOME/tensorgrad``, else ``~/.cache/tensorgrad``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "tensorgrad"


def _roots(root: str | os.PathLike[str] | None) -> list[Path]:
    roots = []
    if root is not None:
        roots.append(Path(root).expanduser())
    env = os.environ.get(DATA_ENV, "")
    if env:
        roots.append(Path(env).expanduser())
    roots.append(cache_dir())
    return roots


def _norm(name: str) -> str:
    return re.sub(r"[-_ .]", "", name.lower())


def _other_dataset_dir(root: Path, name: str) -> str | None:
    """The other dataset ``root`` is named after, if any: its files are not ``name``'s."""
    for other in _TITLES:
        if other != name and _norm(root.name) == _norm(other):
            return other
    return None


def _search(name: str, root: str | os.PathLike[str] | None) -> list[tuple[Path, str | None]]:
    """Directories to look in, in order, each with the reason it is skipped (or None)."""
    found: list[tuple[Path, str | None]] = []
    seen: set[Path] = set()

    def add(path: Path, skip: str | None = None) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            found.append((path, skip))

    for base in _roots(root):
        for sub in _SUBDIRS[name]:
            add(base / sub)
        other = _other_dataset_dir(base, name)
        add(base, f"skipped: named after {_TITLES[other]}, not {_TITLES[name]}" if other else None)
    for path in SYSTEM_DIRS.get(name, ()):
        add(path)
    return found


def search_dirs(name: str, root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The directories searched for ``name`` (``"mnist"`` or ``"fashion-mnist"``), in order."""
    if name not in _TITLES:
        raise ValueError(f"search_dirs: {name!r} is not one of {', '.join(_TITLES)}")
    return [path for path, skip in _search(name, root) if skip is None]


def _file_variants(stem: str) -> tuple[str, ...]:
    """Accepted names of one file: gzip or not, and ``train-images.idx3-ubyte`` spelling."""
    dotted = stem.replace("-idx", ".idx")
    return (f"{stem}.gz", stem, f"{dotted}.gz", dotted)


def _files_in(directory: Path) -> tuple[dict[str, Path], list[str]]:
    """The IDX files present in ``directory`` by role, and the names of the missing ones."""
    present: dict[str, Path] = {}
    missing: list[str] = []
    for role, stem in IDX_FILES.items():
        for candidate in _file_variants(stem):
            path = directory / candidate
            if path.is_file():
                present[role] = path
                break
        else:
            missing.append(f"{stem}.gz")
    return present, missing


def _images(path: Path) -> np.ndarray:
    array = read_idx(path)
    if array.ndim != 3 or array.shape[1:] != (28, 28):
        raise DatasetError(path, f"expected images of shape (N, 28, 28), got {array.shape}")
    if len(array) == 0:
        raise DatasetError(path, "holds no images (its header says 0x28x28)")
    if array.dtype != np.uint8:
        raise DatasetError(path, f"expected unsigned byte pixels, got {array.dtype}")
    return np.divide(array, 255, dtype=np.float32)


def _labels(path: Path, num_classes: int) -> np.ndarray:
    array = read_idx(path)
    if array.ndim != 1:
        raise DatasetError(path, f"expected a 1-d array of labels, got shape {array.shape}")
    if array.dtype != np.uint8:
        raise DatasetError(path, f"expected unsigned byte labels, got {array.dtype}")
    if array.size and int(array.max()) >= num_classes:
        raise DatasetError(path, f"label {int(array.max())} out of range for {num_classes} classes")
    return array.astype(np.int64)


def _read_split(files: dict[str, Path], name: str, source: str) -> LoadedDataset:
    classes = _CLASSES[name]
    arrays = {}
    for split in ("train", "test"):
        images_path, labels_path = files[f"{split}_images"], files[f"{split}_labels"]
        images, labels = _images(images_path), _labels(labels_path, len(classes))
        if len(images) != len(labels):
            raise DatasetError(
                images_path,
                f"{len(images)} images, but {labels_path.name} has {len(labels)} labels",
            )
        arrays[f"{split}_images"], arrays[f"{split}_labels"] = images, labels
    return LoadedDataset(name=name, classes=classes, source=source, **arrays)


def _mirror_list(name: str, mirrors: str | Sequence[str] | None) -> list[str]:
    if mirrors is None:
        env = os.environ.get(MIRROR_ENV[name], "")
        mirrors = env.replace(",", " ").split() if env.strip() else MIRRORS[name]
    elif isinstance(mirrors, str):
        mirrors = [mirrors]
    return [m if m.endswith("/") else m + "/" for m in mirrors]


def _download_dir(name: str, root: str | os.PathLike[str] | None) -> Path:
    """Where downloads go: ``<first root>/<dataset>``, or the first root itself when it is
    already named after the dataset (``--data-dir data/mnist``)."""
    base = _roots(root)[0]
    return base if _norm(base.name) == _norm(name) else base / _SUBDIRS[name][0]


def _download(
    name: str,
    target: Path,
    mirrors: list[str],
    timeout: float,
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, Path], str]:
    """Download the files missing from ``target``; stop at the first that no mirror has."""
    present, _ = _files_in(target)
    used: set[str] = set()
    for role, stem in IDX_FILES.items():
        if role in present:
            continue
        filename = f"{stem}.gz"
        urls = [m + filename for m in mirrors]
        url = download_file(urls, target / filename, MD5[name].get(filename), timeout, progress)
        used.add(url[: -len(filename)])
        present[role] = target / filename
    origin = ", ".join(sorted(used)) if used else "an earlier download"
    return present, f"downloaded from {origin} into {target}"


def _not_found_message(
    name: str,
    searched: list[tuple[Path, str | None]],
    download_note: str,
    mirrors: list[str],
    target: Path,
) -> str:
    title = _TITLES[name]
    files = [f"{stem}.gz" for stem in IDX_FILES.values()]
    lines = [
        f"{title} was neither found nor downloaded.",
        f"Looked for {', '.join(files[:-1])} and {files[-1]} (or the same without .gz) in:",
    ]
    for path, skip in searched:
        if skip is not None:
            state = skip
        elif not path.is_dir():
            state = "does not exist"
        else:
            missing = _files_in(path)[1]
            state = "has none of them"
            if len(missing) < len(IDX_FILES):
                state = "missing " + ", ".join(missing)
        lines.append(f"  {path}: {state}")
    lines.append(download_note)
    sub = _SUBDIRS[name][0]
    lines += [
        f"To use {title}, do one of:",
        "  - put the four files in one of the directories above;",
        f"  - set {DATA_ENV}=/path/to/data, with the files in /path/to/data/{sub}/ "
        "or /path/to/data/;",
        "  - pass root=/path/to/data (on the command line: --data-dir /path/to/data);",
        f"  - download them from {' or '.join(mirrors) or MIRRORS[name][0]} into {target}/ "
        "(their MD5 checksums are in tensorgrad.data.MD5).",
    ]
    return "\n".join(lines)


def _load_idx_dataset(
    name: str,
    root: str | os.PathLike[str] | None,
    download: bool,
    mirrors: str | Sequence[str] | None,
    timeout: float,
    progress: Callable[[str], None] | None,
) -> LoadedDataset:
    searched = _search(name, root)
    for path, skip in searched:
        if skip is None:
            files, missing = _files_in(path)
            if not missing:
                return _read_split(files, name, str(path))
    urls = _mirror_list(name, mirrors)
    target = _download_dir(name, root)
    if download:
        try:
            files, source = _download(name, target, urls, timeout, progress)
        except DownloadError as exc:
            note = f"Download into {target} failed: {exc}"
        else:
            return _read_split(files, name, source)
    else:
        note = "Downloading was turned off (download=False)."
    message = _not_found_message(name, searched, note, urls, target)
    raise DatasetNotFoundError(message, [p for p, skip in searched if skip is None], note)


def load_mnist(
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    *,
    mirrors: str | Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> LoadedDataset:
    """MNIST, 60,000 training and 10,000 test images of handwritten digits, 28x28.

    Found on disk (see the module's docstring for where) or downloaded and verified. Raises
    :class:`DatasetNotFoundError` saying where it looked and why the download failed, or
    :class:`DatasetError` when a file is corrupt. ``progress`` is called with a line per
    download attempt.
    """
    return _load_idx_dataset("mnist", root, download, mirrors, timeout, progress)


def load_fashion_mnist(
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    *,
    mirrors: str | Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> LoadedDataset:
    """Fashion-MNIST, Zalando's 28x28 images of clothing in the ten
    :data:`FASHION_MNIST_CLASSES`; found and downloaded like :func:`load_mnist`."""
    return _load_idx_dataset("fashion-mnist", root, download, mirrors, timeout, progress)


def load_digits(test_size: int = 360, seed: int = 0) -> LoadedDataset:
    """scikit-learn's bundled 8x8 digits (1,797 images), offline, split deterministically.

    Pixels are scaled from 0..16 to [0, 1]. The test set takes ``test_size`` images,
    stratified: each class gives its share (largest remainders settle the rounding), chosen
    by a permutation seeded with ``seed``. Both splits keep the original order.
    """
    from sklearn.datasets import load_digits as sklearn_load_digits

    bunch = sklearn_load_digits()
    images = np.divide(bunch.images, 16, dtype=np.float32)
    labels = np.asarray(bunch.target, dtype=np.int64)
    n = len(labels)
    if isinstance(test_size, bool) or not isinstance(test_size, int) or not 0 < test_size < n:
        raise ValueError(f"load_digits: test_size must be an int in 1..{n - 1}, got {test_size!r}")
    classes, counts = np.unique(labels, return_counts=True)
    quota = counts * test_size / n
    take = np.floor(quota).astype(np.int64)
    shortfall = test_size - int(take.sum())
    take[np.argsort(-(quota - take), kind="stable")[:shortfall]] += 1
    rng = np.random.default_rng(seed)
    test_mask = np.zeros(n, dtype=bool)
    for cls, k in zip(classes, take, strict=True):
        members = np.flatnonzero(labels == cls)
        test_mask[rng.permutation(members)[:k]] = True
    return LoadedDataset(
        name="digits",
        train_images=images[~test_mask],
        train_labels=labels[~test_mask],
        test_images=images[test_mask],
        test_labels=labels[test_mask],
        classes=_DIGIT_CLASSES,
        source="scikit-learn (sklearn.datasets.load_digits)",
    )


def load_dataset(
    name: str,
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    *,
    mirrors: str | Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> LoadedDataset:
    """Resolve the training command's ``--dataset`` (and ``--data-dir`` as ``root``).

    ``"mnist"`` and ``"fashion-mnist"`` raise when the data can be neither found nor
    downloaded; ``"digits"`` always works; ``"auto"`` is MNIST when it can be found or
    downloaded, and otherwise the digits, with a ``notice`` saying why.
    """
    key = name.strip().lower().replace("_", "-") if isinstance(name, str) else name
    if key not in DATASET_NAMES:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)}")
    if key == "digits":
        return load_digits()
    if key in _TITLES:
        return _load_idx_dataset(key, root, download, mirrors, timeout, progress)
    try:
        return _load_idx_dataset("mnist", root, download, mirrors, timeout, progress)
    except DatasetNotFoundError as exc:
        reason = str(exc)
    except DatasetError as exc:
        reason = f"MNIST could not be read: {exc}"
    notice = f"Using scikit-learn's 8x8 digits dataset instead of MNIST.\n{reason}"
    return dataclasses.replace(load_digits(), notice=notice)
