"""API key and data-parallel rank."""

from __future__ import annotations

from conformance import api
from conformance.grounds import builds_on
from conformance.registry import checks
from conformance.server.dp_rank import HEADER as RANK
from conformance.session import Session
from conformance.tito.semantics import fail


@checks("AUTH-001")
def test_generate_needs_key(tito: Session) -> None:
    api.rejected(tito, api.body(1), status=401, auth=False, what="generate without a key")
    api.rejected(
        tito,
        api.body(1),
        status=401,
        auth=False,
        headers={"Authorization": "Bearer not-the-key"},
        what="generate, wrong key",
    )
    api.generate(tito, api.body(1), what="generate with the key")


@checks("AUTH-002", builds_on=("AUTH-001",))
def test_abort_needs_key(tito: Session) -> None:
    api.rejected(
        tito,
        {"request_ids": []},
        status=401,
        path=api.ABORT,
        auth=False,
        what="/inference/v1/abort_requests without a key",
    )


GUARDED = (api.GENERATE, api.ABORT, "/v1/completions/render")


@checks("AUTH-004")
def test_unauthorized_body(tito: Session) -> None:
    """Judges the first 401 any guarded path gives (which paths give one is AUTH-001/002's)."""
    for path in GUARDED:
        reply = tito.client.post(path, api.body(1), auth=False)
        if reply.status == 401:
            break
    else:
        builds_on(tito, "AUTH-001")
        fail(f"no guarded path ({', '.join(GUARDED)}) answered 401 without the key")
    if reply.json() != {"error": "Unauthorized"}:
        fail(f'the 401 body is {reply.body[:200]!r}, expected {{"error": "Unauthorized"}}')


@checks("AUTH-005")
def test_health_open(tito: Session) -> None:
    api.status_is(tito.client.get("/health", auth=False), 200, "/health without a key")


@checks("DP-001")
def test_ranks_in_range(tito: Session) -> None:
    for rank in range(tito.features.dp_size or 1):
        api.generate(tito, api.body(1), headers={RANK: str(rank)}, what=f"rank {rank}")


@checks("DP-002")
def test_non_integer_rank_ignored(tito: Session) -> None:
    for value in ("abc", "1.5"):
        api.generate(tito, api.body(1), headers={RANK: value}, what=f"rank header {value!r}")


@checks("DP-003")
def test_rank_out_of_range(tito: Session) -> None:
    outside = tito.features.dp_size if tito.features.dp_size is not None else 1_000_000
    for rank in (outside, -1):
        api.rejected(
            tito,
            api.body(1),
            headers={RANK: str(rank)},
            what=f"rank {rank} (data_parallel_size {tito.features.dp_size})",
        )
