"""respx wiring: inside `respx.mock`, the TITO paths are answered by an in-process mock.

A client whose tests already mock HTTP with respx keeps its router and its other routes; the
TITO paths the mock serves (those of `openapi/tito.yaml`: generate, abort, render, derender,
health, models, version and, in dev mode, the weight-label endpoints; plus `/mock/stats`) get
the mock's real answers, streams included, with no socket. Other paths on the same host, the
OpenAI-compatible completions among them, stay the router's business.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from starlette.routing import Route

from mock_server.endpoints import mock_stats
from mock_server.harness.tito_mock import TitoMock
from openapi import load_spec

DEFAULT_BASE_URL = "http://tito.mock"


MOCK_PATHS = (mock_stats.PATH,)


def tito_paths(mock: TitoMock) -> list[str]:
    """The paths of the OpenAPI document (and the mock's stats) this mock's flags serve; the
    OpenAI-compatible routes the mock also answers stay the router's, like any other path.
    An older release's missing routes (`--mock-vllm-version`) are the mock's too: it answers
    them 404, as that release does."""
    wanted = {*load_spec()["paths"], *MOCK_PATHS}
    served = [r.path for r in mock.app.routes if isinstance(r, Route) and r.path in wanted]
    return served + [p for p in mock.app.state.mock.unrouted if p in wanted]


def add_routes(router: Any, mock: TitoMock, base_url: str = DEFAULT_BASE_URL) -> list[Any]:
    """Route every TITO path under `base_url` on the respx `router` to `mock`; returns the
    routes (respx asserts called routes only where you ask it to)."""
    url = httpx.URL(base_url)
    sync_transport, async_transport = mock.transport(), mock.async_transport()

    def answer(request: httpx.Request) -> Any:
        # respx calls a side effect from its sync and its async handler alike and awaits what
        # it returns only in the async one: a running loop in this thread tells them apart.
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return sync_transport.handle_request(request)
        return async_transport.handle_async_request(request)

    where: dict[str, Any] = {"scheme": url.scheme, "host": url.host}
    if url.port is not None:
        where["port"] = url.port
    prefix = url.path.rstrip("/")
    return [
        router.route(**where, path=prefix + path).mock(side_effect=answer)
        for path in tito_paths(mock)
    ]
