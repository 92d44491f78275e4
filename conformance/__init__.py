"""The TITO conformance suite: requirements as data, checks keyed by requirement ID."""
