"""Each exchange's wall clock, held at every socket operation under it.

httpx's timeouts bound one read, not an exchange: a server that sends its head a byte every
few seconds, or a body a chunk just inside each read timeout, keeps every read within its
timeout for as long as it likes. So the client runs an exchange `within` a `Bound`, and the
network backend under httpcore (`bounded_transport`) cuts each connect, read and write at
what is left of it: no exchange outlives its bound, whatever the server sends, and so no run
outlives its deadline. An exchange read in another thread or task than the one that bounded
it keeps httpx's per-read timeouts (and the readers' checks of their own deadline between
chunks).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

_SocketOption = Any  # httpcore's SOCKET_OPTION, which it does not export


@dataclass
class Bound:
    """When the exchange must have ended (`time.monotonic()`): its `own` clock, or the run's
    (`until`) if that ends first. `expired` once a socket operation was cut at it (rather than
    at its own timeout)."""

    own: float
    until: float | None = None
    expired: bool = False

    @property
    def at(self) -> float:
        return self.own if self.until is None else min(self.own, self.until)

    @property
    def by_run(self) -> bool:
        """It was the run's clock that cut the exchange, not the exchange's own."""
        return self.expired and self.until is not None and self.until < self.own

    def clamp(self, timeout: float | None, fault: type[Exception]) -> float:
        """`timeout`, no longer than what is left; `fault` if nothing is."""
        left = self.at - time.monotonic()
        if left <= 0:
            self.expired = True
            raise fault("the exchange's deadline passed")
        return left if timeout is None else min(timeout, left)

    def cut(self) -> None:
        """A socket operation timed out: at the bound, if it was the bound that ran out."""
        if time.monotonic() >= self.at - 0.001:
            self.expired = True


_current: ContextVar[Bound | None] = ContextVar("tito_exchange_bound", default=None)


@contextmanager
def within(bound: Bound) -> Iterator[Bound]:
    """Run the block's exchange within `bound` (the innermost bound wins: a request sent while
    a stream is open is bounded by its own clock, the stream's again after it)."""
    token = _current.set(bound)
    try:
        yield bound
    finally:
        try:
            _current.reset(token)
        except ValueError:  # left in another context than it was entered in
            _current.set(None)


def _clamp(timeout: float | None, fault: type[Exception]) -> tuple[Bound | None, float | None]:
    bound = _current.get()
    return bound, timeout if bound is None else bound.clamp(timeout, fault)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        bound, timeout = _clamp(timeout, httpcore.ReadTimeout)
        try:
            return self._stream.read(max_bytes, timeout)
        except httpcore.ReadTimeout:
            if bound is not None:
                bound.cut()
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        bound, timeout = _clamp(timeout, httpcore.WriteTimeout)
        try:
            self._stream.write(buffer, timeout)
        except httpcore.WriteTimeout:
            if bound is not None:
                bound.cut()
            raise

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        _, timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        _, timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _Stream(
            self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        _, timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _Stream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        bound, timeout = _clamp(timeout, httpcore.ReadTimeout)
        try:
            return await self._stream.read(max_bytes, timeout)
        except httpcore.ReadTimeout:
            if bound is not None:
                bound.cut()
            raise

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        bound, timeout = _clamp(timeout, httpcore.WriteTimeout)
        try:
            await self._stream.write(buffer, timeout)
        except httpcore.WriteTimeout:
            if bound is not None:
                bound.cut()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        _, timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _AsyncStream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        _, timeout = _clamp(timeout, httpcore.ConnectTimeout)
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _AsyncStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        _, timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _AsyncStream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def bounded_transport(**options: Any) -> httpx.HTTPTransport:
    """httpx's transport, its sockets held to each exchange's `Bound`. httpx takes no network
    backend of its own, so the one of the httpcore pool it builds is wrapped in place."""
    transport = httpx.HTTPTransport(**options)
    pool = transport._pool
    assert isinstance(pool, httpcore.ConnectionPool), "a proxy's pool is not bounded"
    pool._network_backend = _Backend(pool._network_backend)
    return transport


def bounded_async_transport(**options: Any) -> httpx.AsyncHTTPTransport:
    """`bounded_transport`, for asyncio."""
    transport = httpx.AsyncHTTPTransport(**options)
    pool = transport._pool
    assert isinstance(pool, httpcore.AsyncConnectionPool), "a proxy's pool is not bounded"
    pool._network_backend = _AsyncBackend(pool._network_backend)
    return transport
