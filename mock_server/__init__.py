"""A deterministic CPU stand-in for vLLM's TITO API."""

LAYERS = (
    "",
    "wire",
    "validation",
    "behaviour",
    "parsing",
    "engine",
    "transforms",
    "answers",
    "endpoints",
    "stages",
    "rendering",
    "serve",
    "router",
    "harness",
    "pytest_plugin",
    "cli",
    "__main__",
)
"""The package's rooms from the bottom up ("" is this face): a module imports its own room and
the rooms below it, never one above (tests/test_layout.py); docs/design/layout.md is drawn
from this plan and each room's docstring."""
