"""Send one corpus case to one server and return its `Answer` (abort flows included), through
the kit's client; an abort flow goes through the suite's in-flight routine (`acting`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from conformance.diff.answer import Answer, Request
from conformance.diff.case import Case
from conformance.inflight.acting import stream_acting, whole_acting
from conformance.inflight.timeline import REPEAT_EVERY_S, Timeline, ids_for
from conformance.wire import Client, Reply, ServerBroke, Unsendable, auth_header

WRONG_KEY = "tito-diff-wrong-key"
PREFIX = "generate-tokens-"


@dataclass
class Target:
    """A server and one pooled client for it (making a client per request costs ~50 ms)."""

    base_url: str
    api_key: str | None = None
    timeout: float | None = None
    """Per request (None: the kit's `DEFAULT_TIMEOUT_S`)."""
    _client: Client | None = field(default=None, repr=False)

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client(
                self.base_url, self.api_key, self.timeout, stop_after=None, keep_log=False
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def request_of(case: Case) -> Request:
    return Request(
        case.method, case.path, case.body, dict(case.headers), timing_dependent=bool(case.abort)
    )


def _headers(case: Case, target: Target) -> dict[str, str]:
    headers = dict(case.headers)
    if case.content_type is not None and (case.body is not None or case.raw is not None):
        headers["Content-Type"] = case.content_type
    key = {"key": target.api_key, "wrong": WRONG_KEY, "none": None}[case.auth]
    headers.update(auth_header(key))
    return headers


def _content(case: Case) -> bytes | None:
    if case.raw is not None:
        return case.raw.encode("utf-8")
    return None if case.body is None else json.dumps(case.body).encode("utf-8")


def send(case: Case, target: Target) -> Answer:
    """The server's answer; a transport failure (or a request no client can send) is raised
    as ServerBroke."""
    try:
        return _send(case, target)
    except Unsendable as exc:
        raise ServerBroke(str(exc)) from None


def _send(case: Case, target: Target) -> Answer:
    headers, content = _headers(case, target), _content(case)
    client = target.client
    if case.abort is None:
        deadline = client.stream_deadline if case.long else None
        reply = client.request(
            case.method, case.path, content=content, headers=headers, auth=False, timeout=deadline
        )
        return Answer.from_reply(reply)
    if case.stream:
        return _abort_stream(case, target, headers, content)
    return _abort_plain(case, target, headers, content)


def _abort(case: Case, target: Target, request_id: str) -> Reply | None:
    """The abort by `request_id`; None when it could not be sent (the flow's answer is the
    request's, whatever became of its abort)."""
    assert case.abort is not None
    headers = {k: v for k, v in _headers(case, target).items() if k == "Authorization"}
    try:
        return target.client.post(
            case.abort.path, {"request_ids": ids_for(request_id)}, headers=headers, auth=False
        )
    except ServerBroke:
        return None


def _own_id(case: Case) -> str:
    body = case.body if isinstance(case.body, dict) else {}
    return PREFIX + str(body.get("request_id", ""))


def _line(case: Case) -> Timeline:
    body = case.body if isinstance(case.body, dict) else {}
    tokens = (body.get("sampling_params") or {}).get("max_tokens")
    return Timeline(tokens if isinstance(tokens, int) else 0, _own_id(case))


def _abort_plain(
    case: Case, target: Target, headers: dict[str, str], content: bytes | None
) -> Answer:
    """Abort by the request's own id `delay_s` after sending it, again until it answers."""
    assert case.abort is not None
    client = target.client

    def request() -> Reply:
        return client.request(case.method, case.path, content=content, headers=headers, auth=False)

    reply = whole_acting(
        _line(case),
        request,
        lambda request_id: _abort(case, target, request_id),
        own_id=_own_id(case),
        delay_s=case.abort.delay_s,
        every_s=REPEAT_EVERY_S,
        timeout=client.timeout,
    )
    return Answer.from_reply(reply)


def _abort_stream(
    case: Case, target: Target, headers: dict[str, str], content: bytes | None
) -> Answer:
    """Abort by the id the server returned in its first chunk, after the first events."""
    abort = case.abort
    assert abort is not None
    line = _line(case)
    stream_acting(
        target.client,
        line,
        case.path,
        lambda request_id: _abort(case, target, request_id),
        own_id=_own_id(case),
        content=content,
        headers=headers,
        auth=False,
        ready=lambda line: line.events >= abort.after_events,
        past_done=True,
    )
    return Answer.of(line.status, line.content_type, line.raw)
