"""Fixtures shared by several test packages: the loopback download server (``http_server``),
the ``torch`` marker on the PyTorch comparisons (``tests.torch_marker``), and hypothesis's
settings for the whole suite."""

from hypothesis import settings

pytest_plugins = ["tests.local_server", "tests.torch_marker"]

# Nothing in the suite may depend on timing: hypothesis's per-example deadline (200 ms by
# default) fails a correct test on a loaded machine (it did, in tests/distributed).
settings.register_profile("tensorgrad", deadline=None)
settings.load_profile("tensorgrad")
