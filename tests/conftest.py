"""Fixtures shared by several test packages: the loopback download server (``http_server``)."""

pytest_plugins = ["tests.local_server"]
