"""Datasets, samplers, batch loading, and MNIST / Fashion-MNIST / digits for tensorgrad.

The dataset, sampler and loader classes are PyTorch's ``torch.utils.data`` (a PyTorch
program's ``torch.utils.data`` becomes ``tensorgrad.data``). Importing this package is cheap:
the tensor engine is imported when the first batch is made into Tensors, scikit-learn when
the digits are loaded, and urllib when something is downloaded.
"""

from tensorgrad.data.collate import default_collate, default_convert, stack_samples
from tensorgrad.data.dataloader import DataLoader, get_worker_info
from tensorgrad.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tensorgrad.data.datasets import (
    DATA_ENV,
    DATASET_NAMES,
    FASHION_MNIST_CLASSES,
    IDX_FILES,
    MD5,
    MIRROR_ENV,
    MIRRORS,
    SYSTEM_DIRS,
    LoadedDataset,
    cache_dir,
    load_dataset,
    load_digits,
    load_fashion_mnist,
    load_mnist,
    search_dirs,
)
from tensorgrad.data.distributed import DistributedSampler
from tensorgrad.data.download import DEFAULT_TIMEOUT, download_file, md5sum
from tensorgrad.data.errors import DatasetError, DatasetNotFoundError, DownloadError
from tensorgrad.data.idx import IDX_DTYPES, read_idx, write_idx
from tensorgrad.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "DATASET_NAMES",
    "DATA_ENV",
    "DEFAULT_TIMEOUT",
    "FASHION_MNIST_CLASSES",
    "IDX_DTYPES",
    "IDX_FILES",
    "MD5",
    "MIRRORS",
    "MIRROR_ENV",
    "SYSTEM_DIRS",
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DatasetError",
    "DatasetNotFoundError",
    "DistributedSampler",
    "DownloadError",
    "IterableDataset",
    "LoadedDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "cache_dir",
    "default_collate",
    "default_convert",
    "download_file",
    "get_worker_info",
    "load_dataset",
    "load_digits",
    "load_fashion_mnist",
    "load_mnist",
    "md5sum",
    "random_split",
    "read_idx",
    "search_dirs",
    "stack_samples",
    "write_idx",
]
