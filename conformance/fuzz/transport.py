"""The fuzzer's sender: a schemathesis case goes out through the kit's client (bounded reads,
one timeout configuration, in-process or over HTTP), and its answer comes back as the
schemathesis `Response` that `Case.validate_response` judges.

The request is the one schemathesis would send (`Case.as_transport_kwargs`, prepared by
requests exactly as its own transport prepares it), so the bytes on the wire, the seeds and
the reproducers stay what they were when schemathesis sent it.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from schemathesis.core.transport import Response

from conformance.wire import Client, Reply


def send(client: Client, case: Any, headers: dict[str, str]) -> Response:
    """Send `case` (plus `headers`) to the client's server; ServerBroke when it broke."""
    import requests

    freeze(case, client.base_url)
    kwargs = case.as_transport_kwargs(base_url=client.base_url, headers=headers)
    request = requests.Request(**kwargs).prepare()
    sent = {
        name: value.decode("latin-1") if isinstance(value, bytes) else value
        for name, value in request.headers.items()
        if name.lower() != "content-length"
    }
    body = request.body.encode("utf-8") if isinstance(request.body, str) else request.body
    assert body is None or isinstance(body, bytes)  # prepared: never a stream
    reply = client.request(
        request.method or "GET", request.url or "", content=body, headers=sent, auth=False
    )
    return response_of(reply, request)


def freeze(case: Any, base_url: str) -> None:
    """What `Case.call` does before sending (schemathesis 4.32): the case as it is now is its
    baseline; a part changed since it was drawn (`Fuzzer.prepare` fixes and bounds cases) is
    revalidated, so a negative case made valid is judged as the positive one it became; then
    its metadata is frozen and the base URL its reproducer names is set."""
    case._sync_validated_hashes()
    case._check_modifications()
    if case._meta is not None and case._meta.is_dirty():
        case._revalidate_metadata()
    case.freeze_metadata()
    object.__setattr__(case, "_base_url", base_url)


def response_of(reply: Reply, request: Any) -> Response:
    """The kit's recorded answer as schemathesis's response type (what its checks read)."""
    from requests.structures import CaseInsensitiveDict
    from requests.utils import get_encoding_from_headers

    status = reply.status
    try:
        message = HTTPStatus(status).phrase
    except ValueError:
        message = ""
    return Response(
        status_code=status,
        headers={name: [value] for name, value in reply.headers.items()},
        content=reply.body,
        request=request,
        elapsed=reply.exchange.elapsed_s or 0.0,
        verify=True,
        message=message,
        encoding=get_encoding_from_headers(CaseInsensitiveDict(reply.headers)),
    )
