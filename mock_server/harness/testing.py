"""Helpers for tests that drive the mock: in-process clients and a real loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import httpx

from mock_server.behaviour.config import FastPaths, parse_args
from mock_server.serve.app import create_app


def asgi_client(
    argv: list[str], env: dict[str, str] | None = None, fast: FastPaths | None = None
) -> httpx.AsyncClient:
    """An in-process client (httpx.ASGITransport buffers each response, streams included);
    `fast`: the shortcuts its app takes (tests compare them with the general paths)."""
    app = create_app(replace(parse_args(argv, env or {}), fast=fast or FastPaths()))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock")


@contextmanager
def running_server(argv: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """A real uvicorn server on a free loopback port in a thread; yields its base URL."""
    from anyio.from_thread import start_blocking_portal

    from mock_server.harness.tito_mock import loopback

    app = create_app(parse_args(argv, env or {}))
    with start_blocking_portal() as portal, loopback(app, portal) as base_url:
        yield base_url
