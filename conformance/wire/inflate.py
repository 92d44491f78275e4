"""An answer's body as it is decoded, a bounded step at a time: what the client reads instead
of `Response.iter_bytes`, so a compressed body cannot inflate past the size cap in one step.

httpx decodes each raw read whole: one 64 KiB read of a gzip bomb is 64 MiB once inflated,
and the probe reads 15 answers at once (a GiB before any size check could look). Here httpx's
own decoders get the raw bytes `RAW_STEP` at a time, which deflate inflates to at most 1,032
times as much: the size cap is checked between steps, and no piece is larger than a raw read
of a plain body. The client asks only for the codings that bound holds for
(`ACCEPT_ENCODING`); brotli (installed beside Locust) inflates ~600,000-fold, so an answer in
it, in any coding not asked for, or in codings stacked on each other (each step of the outer
one feeds the next a whole step's worth) is the server's failure, not read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from conformance.wire.faults import ServerBroke

ACCEPT_ENCODING = "gzip, deflate"
"""What the client asks for: the codings it inflates within a bound."""
INFLATED = frozenset({"gzip", "deflate"})
RAW_STEP = 64
"""Raw bytes handed to a decoder at once: at most ~66 KiB inflated (deflate's 1,032:1), so a
piece is no larger than a raw read of an uncompressed body (httpcore reads 64 KiB)."""


def coding(response: httpx.Response) -> str | None:
    """The answer's content coding (None: identity), or the server's failure for one the
    client cannot inflate within a bound."""
    codings = [
        value.strip().lower()
        for value in response.headers.get_list("content-encoding", split_commas=True)
        if value.strip().lower() not in ("", "identity")
    ]
    if len(codings) > 1:
        raise ServerBroke(
            f"answered Content-Encoding {', '.join(codings)}: codings stacked on each other "
            "are not inflated (each multiplies what the last one inflated)"
        )
    if codings and codings[0] not in INFLATED:
        raise ServerBroke(
            f"answered Content-Encoding {codings[0]}, which the client did not accept "
            f"(Accept-Encoding: {ACCEPT_ENCODING})"
        )
    return codings[0] if codings else None


class _Steps(httpx.SyncByteStream):
    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        yield from self.response.iter_raw(RAW_STEP)


class _AsyncSteps(httpx.AsyncByteStream):
    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for raw in self.response.aiter_raw(RAW_STEP):
            yield raw


def _decoding(
    response: httpx.Response, stream: httpx.SyncByteStream | httpx.AsyncByteStream
) -> httpx.Response:
    """A response over the same head whose raw bytes are `stream`'s: httpx decodes them."""
    return httpx.Response(
        response.status_code, headers=response.headers, stream=stream, request=response.request
    )


def decoded(response: httpx.Response) -> Iterator[bytes]:
    """The body, decoded (`coding`), in pieces of at most ~66 KiB."""
    if coding(response) is None:
        yield from response.iter_raw()
        return
    yield from _decoding(response, _Steps(response)).iter_bytes()


async def adecoded(response: httpx.Response) -> AsyncIterator[bytes]:
    """`decoded`, from asyncio."""
    if coding(response) is None:
        async for raw in response.aiter_raw():
            yield raw
        return
    async for piece in _decoding(response, _AsyncSteps(response)).aiter_bytes():
        yield piece
