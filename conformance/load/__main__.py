"""`python -m conformance.load`: `tito-conformance load` in a process that imports Locust first
(gevent's monkey-patching must come before httpx and ssl are imported)."""

import sys

import locust  # noqa: F401  (first: it monkey-patches the standard library for gevent)

from conformance.load.cli import run

sys.exit(run(sys.argv[1:]))
