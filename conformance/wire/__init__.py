"""The kit's one HTTP client, on the wire: every sender (suite, fuzzer, diff, live launcher)
goes through it.

It is bounded in time and size (`bounded`), builds the API-key header in one place, records
every exchange with no credential in it (`exchange`), and decodes SSE with httpx-sse, sync
(`Client`) and async (`AsyncClient`), over a socket or in-process into an ASGI app
(`openapi.asgi_transport`, which streams). Its waits all come from one `Timeouts`
(`loopback.timeouts`), itself derived from one number. Every public name is importable from
here; the modules import each other, never this face.
"""

from conformance.wire.bounded import (
    MAX_BODY,
    MAX_EVENTS,
    AsyncStream,
    ClientBroke,
    PastDeadline,
    Reply,
    ServerBroke,
    Stream,
    Unsendable,
    is_event_stream,
    sse_data,
    sse_events,
)
from conformance.wire.client import AsyncClient, Client
from conformance.wire.sender import IN_PROCESS_URL, UNRESPONSIVE_AFTER, auth_header
from loopback.timeouts import (
    ANSWER_FACTOR,
    CONNECT_CAP_S,
    DEFAULT_TIMEOUT_S,
    STREAM_FACTOR,
    Timeouts,
)

__all__ = [
    "ANSWER_FACTOR",
    "AsyncClient",
    "AsyncStream",
    "CONNECT_CAP_S",
    "Client",
    "ClientBroke",
    "DEFAULT_TIMEOUT_S",
    "IN_PROCESS_URL",
    "MAX_BODY",
    "MAX_EVENTS",
    "PastDeadline",
    "Reply",
    "STREAM_FACTOR",
    "ServerBroke",
    "Stream",
    "Timeouts",
    "UNRESPONSIVE_AFTER",
    "Unsendable",
    "auth_header",
    "is_event_stream",
    "sse_data",
    "sse_events",
]
