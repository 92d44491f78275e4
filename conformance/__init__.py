"""The TITO conformance suite: requirements as data, checks keyed by requirement ID."""

__version__ = "0.1.0"
