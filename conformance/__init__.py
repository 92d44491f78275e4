"""The TITO conformance suite: requirements as data, checks keyed by requirement ID."""

from importlib.metadata import PackageNotFoundError, version

try:  # the one home of the version is pyproject.toml; an installed kit carries it as metadata
    __version__ = version("tito-conformance-kit")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
