"""Send one corpus case to one server and return its `Answer` (abort flows included)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

import httpx

from ..http import auth_header
from ..in_flight import first_request_id, ids_for
from .answer import Answer, Request
from .case import Case

WRONG_KEY = "tito-diff-wrong-key"
PREFIX = "generate-tokens-"


@dataclass
class Target:
    """A server and one pooled client for it (making a client per request costs ~50 ms)."""

    base_url: str
    api_key: str | None = None
    timeout: float = 60.0
    _client: httpx.Client | None = field(default=None, repr=False)

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            limits = httpx.Limits(max_connections=8)
            self._client = httpx.Client(base_url=self.base_url, timeout=self.timeout, limits=limits)
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
    """The server's answer; a transport failure is raised as httpx.HTTPError."""
    headers, content = _headers(case, target), _content(case)
    client = target.client
    if case.abort is None:
        response = client.request(case.method, case.path, headers=headers, content=content)
        return Answer.from_response(response)
    if case.stream:
        return _abort_stream(client, case, target, headers, content)
    return _abort_plain(client, case, target, headers, content)


def _abort(case: Case, target: Target, request_id: str) -> None:
    assert case.abort is not None
    headers = {k: v for k, v in _headers(case, target).items() if k == "Authorization"}
    target.client.post(case.abort.path, json={"request_ids": ids_for(request_id)}, headers=headers)


def _own_id(case: Case) -> str:
    body = case.body if isinstance(case.body, dict) else {}
    return PREFIX + str(body.get("request_id", ""))


def _abort_plain(
    client: httpx.Client, case: Case, target: Target, headers: dict[str, str], content: bytes | None
) -> Answer:
    assert case.abort is not None
    timer = threading.Timer(case.abort.delay_s, _abort, (case, target, _own_id(case)))
    timer.start()
    try:
        response = client.request(case.method, case.path, headers=headers, content=content)
    finally:
        timer.cancel()
        timer.join()
    return Answer.from_response(response)


def _abort_stream(
    client: httpx.Client, case: Case, target: Target, headers: dict[str, str], content: bytes | None
) -> Answer:
    """Abort by the id the server returned in its first chunk, after the first events."""
    assert case.abort is not None
    raw = bytearray()
    aborter: threading.Thread | None = None
    with client.stream(case.method, case.path, headers=headers, content=content) as response:
        for chunk in response.iter_raw():
            raw += chunk
            if aborter is None and raw.count(b"\n\n") >= case.abort.after_events:
                request_id = first_request_id(bytes(raw)) or _own_id(case)
                aborter = threading.Thread(target=_abort, args=(case, target, request_id))
                aborter.start()
        status, content_type = response.status_code, response.headers.get("content-type", "")
    if aborter is not None:
        aborter.join()
    read = httpx.Response(status, headers={"content-type": content_type}, content=bytes(raw))
    return Answer.from_response(read)
