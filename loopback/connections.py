"""What a client or a proxy on loopback keeps of a connection: keep-alive and hop-by-hop headers."""

from __future__ import annotations

KEEPALIVE_S = 2.0
"""Idle connections are kept at most this long: uvicorn (the mock, vLLM) closes its own after
5 s, and a request sent on a connection as the server closes it is reset (a router's client
would then see a 502). Every client of the kit and the kit's proxies use it."""

HOP_BY_HOP = frozenset(
    {
        b"host",
        b"content-length",
        b"transfer-encoding",
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"upgrade",
        b"te",
        b"trailer",
        b"expect",
    }
)
"""Headers of one hop (RFC 9110 §7.6.1, plus the framing ones the next hop sets itself): a
proxy drops them, lower-cased, both ways; every other header passes through."""


def end_to_end(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` without the hop-by-hop ones, names as they came."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
