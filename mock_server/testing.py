"""Helpers for tests that drive the mock: in-process clients and a real loopback server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from mock_server.app import create_app
from mock_server.config import parse_args


def asgi_client(argv: list[str], env: dict[str, str] | None = None) -> httpx.AsyncClient:
    """An in-process client (httpx.ASGITransport buffers each response, streams included)."""
    app = create_app(parse_args(argv, env or {}))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(argv: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """A real uvicorn server on a free loopback port in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    config = parse_args([*argv, "--port", str(port)], env or {})
    app = create_app(config)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    app.state.mock.on_fatal.append(lambda: setattr(server, "should_exit", True))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(5)
