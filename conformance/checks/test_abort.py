"""Aborting live requests, on both paths."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from conformance import api
from conformance.http import ServerBroke
from conformance.registry import checks
from conformance.semantics import check_spans, choices_of, fail
from conformance.session import Session

LONG = api.body(None, ignore_eos=True)  # the server's default max_tokens: a long request


def aborted_stream(s: Session, path: str = api.ABORT, auth: bool = True) -> dict[str, Any]:
    """Start a long stream, abort it after its first chunk, read it to the end.

    A starved server (vLLM's engine busy-spinning on 2 cores) may answer the abort only after
    the stream has ended: that is "too late", not "broken", so such a case is tried once more
    before any check judges it. `too_late` says whether the last try was still too late.
    """
    case = _abort_stream_once(s, path, auth)
    if case["too_late"]:
        case = _abort_stream_once(s, path, auth)
    return case


def _abort_stream_once(s: Session, path: str, auth: bool) -> dict[str, Any]:
    rid = s.rid("abort-stream")
    box: dict[str, Any] = {}
    with s.client.stream(
        api.GENERATE, {**LONG, "stream": True}, headers={"X-Request-Id": rid}
    ) as st:
        if st.status != 200:
            fail(f"long stream answered {st.status}: {st.read_body().body[:200]!r}")
        head = api.read_stream(st, stop_after_tokens=1)

        def read_tail() -> None:  # keeps reading while the abort is in flight
            try:
                box["tail"] = api.read_stream(st)
            except BaseException as exc:  # re-raised below, in the check's thread
                box["error"] = exc
            box["ended_at"] = time.monotonic()

        reader = threading.Thread(target=read_tail, daemon=True)
        reader.start()
        reply = s.client.post(path, {"request_ids": [f"generate-tokens-{rid}"]}, auth=auth)
        answered_at = time.monotonic()
        reader.join()  # bounded: the stream has its own deadline
    if "error" in box:
        raise box["error"]
    tail: api.Streamed = box["tail"]
    chunks = [c for ch in head.chunks + tail.chunks for c in ch.get("choices") or []]
    aborted = bool(chunks) and chunks[-1].get("finish_reason") == "abort"
    too_late = not aborted and box["ended_at"] <= answered_at
    return {"head": head, "tail": tail, "abort": reply, "too_late": too_late}


def too_late_message(what: str) -> str:
    return (
        f"{what} ran to its end before the server answered the abort, in two tries: the "
        "server does not serve an abort while it generates (on vLLM CPU: renice the engine)"
    )


def stream_case(s: Session) -> dict[str, Any]:
    return s.remember("abort-stream", lambda: aborted_stream(s))


@checks("ABORT-001")
def test_abort_registered(tito: Session) -> None:
    tito.need_generate()
    reply = tito.client.post(api.ABORT, {"request_ids": []})  # sent, so a failure shows it
    if reply.status in (404, 405):
        fail(f"generate is served but POST {api.ABORT} answered {reply.status}")


@checks("ABORT-002", "STOP-005", "WV-003")
def test_abort_stream(tito: Session) -> None:
    tito.need("abort")
    case = stream_case(tito)
    api.status_is(case["abort"], 200, "abort")
    tail: api.Streamed = case["tail"]
    chunks = [c for ch in case["head"].chunks + tail.chunks for c in ch.get("choices") or []]
    last = chunks[-1] if chunks else {}
    if case["too_late"]:
        fail(too_late_message("the aborted stream"))
    if last.get("finish_reason") != "abort":
        fail(
            f"the aborted stream ended with finish_reason {last.get('finish_reason')!r} after "
            f"{sum(len(c.get('token_ids') or []) for c in chunks)} tokens, not 'abort'"
        )
    if not tail.done:
        fail("the aborted stream did not end with data: [DONE]")
    if last.get("stop_reason") is not None:
        fail(f"an aborted choice has stop_reason {last.get('stop_reason')!r}, expected null")
    tokens = sum(len(c.get("token_ids") or []) for c in chunks)
    check_spans(last.get("weight_versions"), tokens, "the last chunk after an abort")


def aborted_whole(s: Session) -> dict[str, Any]:
    """A long non-streamed request, aborted while it runs; tried twice if the abort was late."""

    def make() -> dict[str, Any]:
        choice, too_late = _abort_whole_once(s)
        if too_late:
            choice, too_late = _abort_whole_once(s)
        if too_late:
            fail(too_late_message("the aborted non-streamed request"))
        return choice

    return s.remember("abort-whole", make)


def _abort_whole_once(s: Session) -> tuple[dict[str, Any], bool]:
    rid = s.rid("abort-whole")
    result: dict[str, Any] = {}

    def send() -> None:
        try:
            result["reply"] = s.client.post(api.GENERATE, LONG, headers={"X-Request-Id": rid})
        except ServerBroke as exc:
            result["error"] = exc
        result["replied_at"] = time.monotonic()

    worker = threading.Thread(target=send, daemon=True)
    worker.start()
    worker.join(0.1)
    first_answered: float | None = None
    ends = time.monotonic() + s.config.timeout
    while worker.is_alive() and time.monotonic() < ends:
        s.client.post(api.ABORT, {"request_ids": [f"generate-tokens-{rid}"]})
        first_answered = first_answered or time.monotonic()
        worker.join(0.2)
    if first_answered is None:
        pytest.skip(
            "not applicable: the request finished within 0.1 s, before an abort could be "
            "sent (start the server with a per-token latency, e.g. --mock-itl-ms 1)"
        )
    worker.join(s.config.timeout)
    if "error" in result:
        raise result["error"]
    if "reply" not in result:
        fail("the aborted non-streamed request never answered")
    reply = result["reply"]
    api.status_is(reply, 200, "aborted non-streamed generate")
    data = reply.json()
    api.validate("GenerateResponse", data, "aborted response")
    choice = choices_of(data)[0]
    late = choice.get("finish_reason") != "abort" and result["replied_at"] <= first_answered
    return choice, late


@checks("ABORT-003")
def test_abort_non_streamed(tito: Session) -> None:
    tito.need("abort")
    choice = aborted_whole(tito)
    if choice.get("finish_reason") != "abort":
        fail(
            f"the aborted request finished with {choice.get('finish_reason')!r} after "
            f"{len(choice.get('token_ids') or [])} tokens"
        )


@checks("ABORT-004")
def test_abort_keeps_partial_output(tito: Session) -> None:
    tito.need("abort")
    choice = aborted_whole(tito)
    if not choice.get("token_ids"):
        fail("the aborted request (aborted 0.2 s after it started) returned no tokens")


@checks("ABORT-005")
def test_abort_missing_ids(tito: Session) -> None:
    tito.need("abort")
    api.rejected(tito, {}, path=api.ABORT, what="abort without request_ids")


@checks("ABORT-006")
def test_abort_empty_200(tito: Session) -> None:
    tito.need("abort")
    reply = tito.client.post(api.ABORT, {"request_ids": [f"generate-tokens-{tito.rid('none')}"]})
    api.status_is(reply, 200, "abort of an unknown id")
    if reply.body.strip():
        fail(f"the abort response is not empty: {reply.body[:200]!r}")


@checks("ABORT-007")
def test_legacy_abort(tito: Session) -> None:
    tito.need("tokens-only", "legacy-abort")
    api.rejected(
        tito, {}, path=api.LEGACY_ABORT, auth=False, what="/abort_requests without request_ids"
    )
    case = aborted_stream(tito, api.LEGACY_ABORT, auth=False)
    api.status_is(case["abort"], 200, "/abort_requests")
    if case["too_late"]:
        fail(too_late_message("a stream aborted through /abort_requests"))
    chunks = [c for ch in case["tail"].chunks for c in ch.get("choices") or []]
    if not chunks or chunks[-1].get("finish_reason") != "abort":
        fail("a stream aborted through /abort_requests did not end with finish_reason abort")


@checks("ABORT-008")
def test_no_legacy_abort_elsewhere(tito: Session) -> None:
    tito.need_generate()
    if tito.features.tokens_only:
        pytest.skip("not applicable: the server is tokens-only")
    reply = tito.client.post(api.LEGACY_ABORT, {"request_ids": []}, auth=False)
    if reply.status not in (404, 405) and b"aborted" not in reply.body:
        fail(f"/abort_requests answered {reply.status} on a server without --tokens-only")


@checks("ABORT-009")
def test_disconnect_aborts(tito: Session) -> None:
    tito.need("mock-stats")
    before = tito.client.get("/mock/stats", auth=False).json()
    with tito.client.stream(api.GENERATE, {**LONG, "stream": True}) as st:
        api.read_stream(st, stop_after_tokens=1)
    ends = time.monotonic() + 3
    while time.monotonic() < ends:
        after = tito.client.get("/mock/stats", auth=False).json()
        if after.get("aborted", 0) > before.get("aborted", 0):
            return
        time.sleep(0.05)
    fail(f"a client disconnected mid-stream but the request was not aborted: stats {after}")
