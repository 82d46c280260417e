"""The IDX reader and writer: every dtype, gzip or raw, and every kind of broken file."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tensorgrad.data import IDX_DTYPES, DatasetError, read_idx, write_idx

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]


def idx_bytes(code: int, shape: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape) + payload


def error_for(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        read_idx(path)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    assert info.value.path == str(path)
    return message


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 4, 5)])
@pytest.mark.parametrize("gz", [True, False])
def test_round_trip_every_dtype(tmp_path: Path, dtype, shape, gz) -> None:
    rng = np.random.default_rng(0)
    array = (rng.standard_normal(shape) * 100).astype(dtype)
    path = tmp_path / ("a.idx.gz" if gz else "a.idx")
    write_idx(path, array)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") is gz
    out = read_idx(path)
    assert out.dtype == np.dtype(dtype)
    assert out.dtype.isnative
    assert out.shape == shape
    assert out.flags.writeable and out.flags.c_contiguous
    np.testing.assert_array_equal(out, array)


def test_big_endian_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "x.idx"
    path.write_bytes(idx_bytes(0x0B, (2,), b"\x01\x02\xff\xfe"))
    np.testing.assert_array_equal(read_idx(path), np.array([0x0102, -2], dtype=np.int16))
    path.write_bytes(idx_bytes(0x0D, (1,), struct.pack(">f", 1.5)))
    assert read_idx(path).tolist() == [1.5]


def test_type_codes() -> None:
    codes = {code: dt.newbyteorder("=") for code, dt in IDX_DTYPES.items()}
    assert codes == {
        0x08: np.uint8,
        0x09: np.int8,
        0x0B: np.int16,
        0x0C: np.int32,
        0x0D: np.float32,
        0x0E: np.float64,
    }


def test_gzip_is_detected_by_content_not_name(tmp_path: Path) -> None:
    array = np.arange(10, dtype=np.uint8)
    hidden = tmp_path / "labels-no-suffix"
    write_idx(hidden, array, compress=True)
    np.testing.assert_array_equal(read_idx(hidden), array)
    raw_named_gz = tmp_path / "labels.gz"
    write_idx(raw_named_gz, array, compress=False)
    np.testing.assert_array_equal(read_idx(raw_named_gz), array)


def test_empty_dimension(tmp_path: Path) -> None:
    path = tmp_path / "empty.idx"
    write_idx(path, np.zeros((0, 28, 28), dtype=np.uint8))
    assert read_idx(path).shape == (0, 28, 28)


def test_bad_magic(tmp_path: Path) -> None:
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(b"\x01\x00\x08\x01" + b"\x00" * 8)
    message = error_for(path)
    assert "bad magic number 0x01000801" in message
    assert "not an IDX file" in message


def test_text_file_is_not_idx(tmp_path: Path) -> None:
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_text("<html>404 Not Found</html>")
    assert "bad magic number 0x3C68746D" in error_for(path)


def test_bad_dtype_code(tmp_path: Path) -> None:
    path = tmp_path / "weird.idx"
    path.write_bytes(idx_bytes(0x0A, (2,), b"\x00\x00"))
    message = error_for(path)
    assert "unknown IDX data type code 0x0A" in message
    assert "0x08 ubyte" in message and "0x0E float64" in message


def test_zero_dimensions(tmp_path: Path) -> None:
    path = tmp_path / "scalar.idx"
    path.write_bytes(b"\x00\x00\x08\x00\x07")
    assert "declares 0 dimensions" in error_for(path)


def test_too_short(tmp_path: Path) -> None:
    path = tmp_path / "tiny.idx"
    path.write_bytes(b"\x00\x00")
    assert "too short for an IDX header: 2 bytes" in error_for(path)


def test_truncated_header(tmp_path: Path) -> None:
    path = tmp_path / "head.idx"
    path.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">I", 60000))
    assert "truncated header: 3 dimensions need 16 header bytes, found 8" in error_for(path)


@pytest.mark.parametrize("gz", [True, False])
def test_truncated_data(tmp_path: Path, gz: bool) -> None:
    path = tmp_path / ("train-images-idx3-ubyte" + (".gz" if gz else ""))
    data = idx_bytes(0x08, (60000, 28, 28), b"\x00" * 1234)
    path.write_bytes(gzip.compress(data) if gz else data)
    message = error_for(path)
    assert message.endswith(
        "train-images-idx3-ubyte"
        + (".gz" if gz else "")
        + ": truncated: header says 60000x28x28 = 47040000 bytes of data, found 1234"
    )


def test_truncated_wide_dtype_names_the_type(tmp_path: Path) -> None:
    path = tmp_path / "ints.idx"
    path.write_bytes(idx_bytes(0x0C, (3, 4), b"\x00" * 40))
    assert "truncated: header says 3x4 int32 = 48 bytes of data, found 40" in error_for(path)


@pytest.mark.parametrize("gz", [True, False])
def test_trailing_garbage(tmp_path: Path, gz: bool) -> None:
    path = tmp_path / "t10k-labels-idx1-ubyte.gz"
    data = idx_bytes(0x08, (5,), bytes(range(5)) + b"junk")
    path.write_bytes(gzip.compress(data) if gz else data)
    message = error_for(path)
    assert "trailing garbage: header says 5 = 5 bytes of data, found 9 (4 extra bytes)" in message


def test_corrupt_gzip_stream(tmp_path: Path) -> None:
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    good = gzip.compress(idx_bytes(0x08, (100,), bytes(100)))
    path.write_bytes(good[:10] + b"\xff" * (len(good) - 10))
    assert "corrupt gzip stream" in error_for(path)


def test_truncated_gzip_stream(tmp_path: Path) -> None:
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    rng = np.random.default_rng(0)
    good = gzip.compress(idx_bytes(0x08, (4, 28, 28), rng.bytes(4 * 28 * 28)))
    path.write_bytes(good[: len(good) // 2])
    message = error_for(path)
    assert "corrupt gzip stream" in message
    assert "t10k-images-idx3-ubyte.gz" in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "nope.gz")


@pytest.mark.parametrize("dtype", [np.int64, np.uint16, np.bool_, np.complex64])
def test_write_rejects_types_without_code(tmp_path: Path, dtype) -> None:
    with pytest.raises(ValueError, match="has no IDX type code"):
        write_idx(tmp_path / "x.idx", np.zeros(3, dtype=dtype))


def test_write_rejects_scalars(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="need 1 to 255 dimensions"):
        write_idx(tmp_path / "x.idx", np.array(3, dtype=np.uint8))


def test_write_big_endian_input(tmp_path: Path) -> None:
    array = np.arange(6, dtype=">i4").reshape(2, 3)
    write_idx(tmp_path / "x.idx", array)
    np.testing.assert_array_equal(read_idx(tmp_path / "x.idx"), array)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hnp.arrays(
        dtype=st.sampled_from(DTYPES),
        shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5),
    ),
    st.booleans(),
)
def test_round_trip_property(tmp_path_factory, array: np.ndarray, gz: bool) -> None:
    path = tmp_path_factory.mktemp("idx") / "a.idx"
    write_idx(path, array, compress=gz)
    out = read_idx(path)
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize("ndim", [65, 200, 255])
def test_more_dimensions_than_numpy_has_is_a_dataset_error(tmp_path: Path, ndim) -> None:
    path = tmp_path / "many.idx"
    path.write_bytes(idx_bytes(0x08, (1,) * ndim, b"\x07"))
    message = error_for(path)
    assert f"IDX header declares {ndim} dimensions; NumPy arrays have at most" in message


def test_as_many_dimensions_as_numpy_allows_still_read(tmp_path: Path) -> None:
    from tensorgrad.data.idx import MAX_DIMS

    path = tmp_path / "deep.idx"
    path.write_bytes(idx_bytes(0x08, (1,) * MAX_DIMS, b"\x07"))
    assert read_idx(path).shape == (1,) * MAX_DIMS
