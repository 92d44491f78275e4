"""The TITO conformance suite: requirements as data, checks keyed by requirement ID."""

from importlib.metadata import PackageNotFoundError, version

try:  # the one home of the version is pyproject.toml; an installed kit carries it as metadata
    __version__ = version("tito-conformance-kit")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


LAYERS = (
    "",
    "requirements",
    "outcomes",
    "document",
    "profiles",
    "product",
    "options",
    "wire",
    "tito",
    "server",
    "registry",
    "session",
    "api",
    "verdicts",
    "grounds",
    "inflight",
    "reporting",
    "load",
    "checks",
    "diff",
    "run",
    "fuzz",
    "coverage",
    "plugin",
    "cli",
)
"""The package's rooms from the bottom up ("" is this face): a module imports its own room and
the rooms below it, never one above (tests/test_layout.py); docs/design/layout.md is drawn
from this plan and each room's docstring."""
