"""A fuzz failure, the requirement it touches, and its reproducer."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .settings import ServerFacts

GROUPS = ("positive", "negative", "wrong-media-type", "out-of-vocabulary", "stateful")

_OP_REQ = {
    "generate": "GEN-001",
    "abortRequests": "ABORT-006",
    "abortRequestsLegacy": "ABORT-007",
    "renderCompletions": "RENDER-001",
    "renderChatCompletions": "RENDER-001",
    "derenderCompletions": "RENDER-001",
    "derenderChatCompletions": "RENDER-001",
    "updateWeightVersion": "WV-007",
    "finishWeightUpdate": "WV-007",
    "weightInfo": "WV-008",
}


@dataclass
class Finding:
    """One distinct failure (deduplicated by operation, group, check and status)."""

    operation: str  # operationId
    label: str  # "POST /inference/v1/generate"
    group: str
    check: str
    status: int | None
    message: str
    curl: str
    seed: int
    case_index: int
    requirement_ids: tuple[str, ...] = ()
    occurrences: int = 1

    @property
    def key(self) -> tuple[str, str, str, int | None]:
        return (self.operation, self.group, self.check, self.status)

    @property
    def reproducer(self) -> str:
        return (
            f"{self.curl}\n# {hash_seed_prefix()}tito-conformance fuzz --seed {self.seed} "
            f"--operation {self.operation}  (group {self.group}, case {self.case_index})"
        )


def hash_seed_prefix() -> str:
    """The draws depend on set/dict order too: the seed reproduces them under this hash seed."""
    value = os.environ.get("PYTHONHASHSEED", "random")
    return f"PYTHONHASHSEED={value} " if value != "random" else "(random hash seed) "


@dataclass
class GroupStats:
    """How many cases one (operation, group) ran, and how long it took."""

    operation: str
    group: str
    cases: int = 0
    duration_s: float = 0.0
    statuses: dict[int, int] = field(default_factory=dict)
    skipped: str = ""
    lax: int = 0  # negative cases only pydantic's lax mode forgives: not held to a 400


def requirements_for(
    check: str, op_id: str, group: str, status: int | None, facts: ServerFacts, stream: bool
) -> tuple[str, ...]:
    """The catalogue IDs a failure files under (the suite's report groups by them)."""
    if group == "out-of-vocabulary":
        return ("ERR-007",)
    if group == "wrong-media-type" and facts.profile != "disabled":
        return ("ERR-006",) if check != "error_body_shape" else ("ERR-002",)
    if (
        facts.profile == "disabled"
        and op_id in _OP_REQ
        and op_id not in ("updateWeightVersion", "finishWeightUpdate", "weightInfo")
    ):
        if check == "negative_data_rejection" or (group == "negative" and status == 400):
            return ("DISABLED-003",)
        if status == 403:
            return ("DISABLED-002",)
        return ("DISABLED-001",) if op_id == "generate" else ("DISABLED-004",)
    if check == "error_body_shape" or (
        status is not None
        and status >= 400
        and check in ("response_schema_conformance", "content_type_conformance")
    ):
        return ("AUTH-004",) if status == 401 else ("ERR-002",)
    if check == "response_schema_conformance" and op_id == "generate":  # a 2xx body's form
        return ("SCHEMA-STREAM-001",) if stream else ("SCHEMA-GEN-001",)
    if check == "stream_chunks_valid":
        return ("SCHEMA-STREAM-001",)
    if check == "request_id_prefix":
        return ("GEN-RESP-004",)
    if check == "stream_well_framed":
        return ("STREAM-001", "STREAM-002")
    if check == "not_a_server_error" and group == "negative":
        return ("ERR-003", "ERR-005") if op_id == "generate" else ("ERR-003",)
    if check in ("negative_data_rejection", "status_code_conformance") and group == "negative":
        return ("ERR-003",)
    if check == "positive_data_acceptance":
        if status == 401:
            return ("AUTH-001",)
        return (
            ("GEN-REQ-012", "ERR-004") if op_id == "generate" else (_OP_REQ.get(op_id, "ERR-008"),)
        )
    if op_id == "generate" and stream:
        return ("STREAM-001",)
    return (_OP_REQ.get(op_id, "ERR-008"),)
