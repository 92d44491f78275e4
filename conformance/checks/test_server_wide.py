"""Checks whose requests reach the whole server, not just their own request.

`POST /abort_requests` with no ids aborts every running request on a dev-mode server (vLLM's
`VLLM_SERVER_DEV_MODE=1`), and the disconnect check reads the server's counters as a whole,
so these never run beside other checks' requests (`conformance.parallel.SERIAL`).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from conformance import api
from conformance.checks.test_abort import aborted_stream, judge_abort_landed
from conformance.in_flight import Inconclusive, payload, plans, ran_past
from conformance.registry import checks
from conformance.semantics import fail
from conformance.session import Session


@checks(
    "AUTH-003",
    needs=(
        "api-key",
        "legacy-abort",
    ),
)
def test_legacy_abort_open(tito: Session) -> None:
    reply = tito.client.post(api.LEGACY_ABORT, {"request_ids": []}, auth=False)
    api.status_is(reply, 200, "/abort_requests without a key")


@checks("ABORT-007", needs=("tokens-only", "legacy-abort"), builds_on=("STREAM-001",))
def test_legacy_abort(tito: Session) -> None:
    # sent with the key when there is one: that it works without is AUTH-003's
    api.rejected(tito, {}, path=api.LEGACY_ABORT, what="/abort_requests without request_ids")
    line, outcome = aborted_stream(tito, api.LEGACY_ABORT)
    judge_abort_landed(line, outcome, "a stream aborted through /abort_requests")


@checks("ABORT-008", needs=("generate",))
def test_no_legacy_abort_elsewhere(tito: Session) -> None:
    if tito.features.tokens_only:
        pytest.skip("not applicable: the server is tokens-only")
    reply = tito.client.post(api.LEGACY_ABORT, {"request_ids": []}, auth=False)
    if reply.status not in (404, 405) and b"aborted" not in reply.body:
        fail(f"/abort_requests answered {reply.status} on a server without --tokens-only")


def _stats(s: Session) -> dict[str, Any]:
    data = s.client.get("/mock/stats", auth=False).json()
    return data if isinstance(data, dict) else {}


def _ended(stats: dict[str, Any]) -> int:
    finished = stats.get("finished")
    return (
        sum(v for v in finished.values() if isinstance(v, int)) if isinstance(finished, dict) else 0
    )


@checks("ABORT-009", needs=("mock-stats",), builds_on=("STREAM-001",))
def test_disconnect_aborts(tito: Session) -> None:
    """Disconnect after the first token of a stream sized to the server's pace; the stats say
    whether the server aborted it. One that finished anyway ignored the disconnect only if it
    ran on past it (the suite's overlap rule, `in_flight.ran_past`): a server that emits its
    whole context before the client can hang up is retried longer (`in_flight.plans`: more
    sequences where the context caps the tokens; never queued, a hang-up is judged running),
    then inconclusive."""
    itl, tried = tito.limits.itl_s or 0.0, []
    for number, plan in enumerate(plans(tito, queue=False)):
        max_tokens = plan.max_tokens
        before = _stats(tito)
        started = time.monotonic()
        body = payload(plan, True, tito.rid(f"disconnect-{number}"))
        with tito.client.stream(api.GENERATE, body) as st:
            api.read_stream(st, stop_after_tokens=1, s=tito)
            first = time.monotonic() - started
        gone = time.monotonic() - started
        waits = time.monotonic() + max(3.0, 2 * tito.limits.seconds_for(max_tokens))
        after = before
        while time.monotonic() < waits:
            after = _stats(tito)
            if after.get("aborted", 0) > before.get("aborted", 0):
                return
            if _ended(after) > _ended(before):  # it finished: before or after the hang-up?
                ended = time.monotonic() - started
                if ran_past(max_tokens, itl, first, gone, gone, ended):
                    fail(
                        f"a client disconnected after the first token ({gone * 1000:.0f} ms) "
                        f"but the request of {plan.describe()} ran to its end "
                        f"({ended * 1000:.0f} ms): stats {after}"
                    )
                break
            time.sleep(0.02)
        else:
            fail(f"a client disconnected mid-stream but the request was not aborted: stats {after}")
        tried.append(f"{plan.describe()} ended {_ended(after) - _ended(before)} sequence(s)")
    raise Inconclusive(
        "disconnecting a stream: every request finished before the client could hang up "
        f"(pace: {tito.limits.describe()}); tries: " + " | ".join(tried)
    )
