"""Drawn cases kept on disk, so that processes drawing the same cases draw them once.

Drawing is most of a folded-in fuzz run's CPU (~7 s of a 12 s `tito-conformance run` against a
fast server), and what is drawn depends only on the spec, the operation, the mode, the seed,
the budget, the hash seed and the versions of schemathesis and hypothesis: nothing the server
answers feeds back into it. A test session that runs the CLI in thirty settings, or a vendor
who runs it again, draws the same cases each time. With `TITO_DRAW_CACHE=DIR` the first process
to draw a key writes it there and every later one reads it; without it nothing is kept.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from schemathesis.core import NOT_SET, NotSet

import openapi

ENV = "TITO_DRAW_CACHE"
FORMAT = 1  # bump when what is stored changes


def _folder() -> Path | None:
    where = os.environ.get(ENV)
    return Path(where) if where else None


@functools.cache
def _stamp() -> bytes:
    """What every draw of this process depends on: format, versions, hash seed and spec (read
    once, not per operation)."""
    versions = [metadata.version(name) for name in ("schemathesis", "hypothesis")]
    head = repr((FORMAT, versions, os.environ.get("PYTHONHASHSEED"))).encode()
    return head + openapi.spec_path().read_bytes()


def key(*parts: Any) -> str:
    """The file name of one draw: everything the cases depend on."""
    return hashlib.sha256(_stamp() + repr(parts).encode()).hexdigest()[:32]


def load(name: str, operation: Any) -> tuple[tuple[Any, ...], str] | None:
    """The cases stored under `name`, bound to `operation`; None when there are none (or the
    file cannot be read: it is drawn again)."""
    folder = _folder()
    if folder is None:
        return None
    try:
        states, skipped = pickle.loads((folder / name).read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        return None
    return tuple(_case(state, operation) for state in states), skipped


def store(name: str, cases: tuple[Any, ...], skipped: str) -> None:
    """Write atomically: a reader sees a whole file or none."""
    folder = _folder()
    if folder is None:
        return
    states = [
        (type(c), {s: getattr(c, s) for s in type(c).__slots__ if s != "operation"}) for c in cases
    ]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
            pickle.dump((states, skipped), out)
        os.replace(out.name, folder / name)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return  # nothing kept: the next process draws again


def _case(stored: tuple[type, dict[str, Any]], operation: Any) -> Any:
    """A case again (schemathesis's "no body" marker as the marker itself: a drawn case's is
    a copy of it too, which schemathesis tells by its type)."""
    kind, state = stored
    case: Any = object.__new__(kind)
    object.__setattr__(case, "operation", operation)
    for slot, value in state.items():
        object.__setattr__(case, slot, NOT_SET if isinstance(value, NotSet) else value)
    return case
