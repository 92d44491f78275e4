"""Output defects as named transformers of a correct answer (see `transformers`).

Importing the package registers every transformer; the mock calls the `apply*` functions at
one place per kind of answer.
"""

from mock_server.transforms import (
    answer_rewrites,
    extensions,
    older_releases,
    partial,
    statuses,
    streams,
)
from mock_server.transforms.transformers import (
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
    "answer_rewrites",
    "extensions",
    "partial",
    "apply",
    "apply_frame",
    "apply_status",
    "apply_wire",
    "registered",
    "older_releases",
    "statuses",
    "streams",
]
