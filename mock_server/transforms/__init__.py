"""Output defects as named transformers of a correct answer (see `registry`).

Importing the package registers every transformer; the mock calls the `apply*` functions at
one place per kind of answer.
"""

from mock_server.transforms import answers, derender_mode, partial, releases, statuses, streams
from mock_server.transforms.registry import (
    Context,
    active,
    apply,
    apply_frame,
    apply_status,
    apply_wire,
    registered,
)

__all__ = [
    "Context",
    "active",
    "answers",
    "derender_mode",
    "partial",
    "apply",
    "apply_frame",
    "apply_status",
    "apply_wire",
    "registered",
    "releases",
    "statuses",
    "streams",
]
