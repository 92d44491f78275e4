"""pytest fixtures for TITO client authors: a mock per test, streaming transports, respx.

Loaded in every pytest run of a project that installs the kit (`pytest11` entry point), so it
imports nothing beyond pytest and starts nothing until a test asks for a fixture:

- `tito_mock`: a `TitoMock` (base URL on a loopback port, `stats()`, `reset()`), configured by
  `@pytest.mark.tito_mock(flags=[...], defects=[...], ttft_ms=..., itl_ms=..., env={...},
  vllm_version=<a key of mock_server.behaviour.releases.RELEASES>,
  scope="function"|"module"|"session")`;
- `tito_mock_factory(...)`: the same arguments, for a test that wants several mocks;
- `tito_transport` / `tito_async_transport`: streaming in-process httpx transports to `tito_mock`;
- `tito_respx`: respx's `respx_mock` router with the TITO paths of `http://tito.mock` answered
  by `tito_mock`;
- `tito_mock_fleet`: N mock engines behind a router (`mock_server.harness.fleet.Fleet`: `.url`,
  `.engines`, `.router`, `.kill(i)`), configured by `@pytest.mark.tito_mock_fleet(engines=2,
  flags=[...], router="auto"|"kit"|"vllm-router", router_defect=None, ...)`.

A mock is torn down at the end of its scope, whatever the test did; mocks of a wider scope are
shared by every test in it that asks for the same settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mock_server.harness.fleet import Fleet
    from mock_server.harness.tito_mock import TitoMock
    from openapi.asgi_transport import AsyncStreamingTransport, StreamingTransport

SCOPES = ("function", "module", "session")
MARKER = (
    "tito_mock(flags=(), defects=(), ttft_ms=None, itl_ms=None, env=None, vllm_version=None, "
    "scope='function'): "
    "how the tito_mock fixture starts the TITO mock for this test"
)
FLEET_MARKER = (
    "tito_mock_fleet(engines=2, flags=(), defects=(), ttft_ms=None, itl_ms=None, env=None, "
    "vllm_version=None, router='auto', router_defect=None, engine_api_key=None): "
    "how the tito_mock_fleet fixture starts its engines and their router for this test"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    config.addinivalue_line("markers", FLEET_MARKER)


class _Shared:
    """Mocks of module or session scope, by (scope node, settings)."""

    def __init__(self) -> None:
        self.mocks: dict[tuple[str, Any], TitoMock] = {}


_SHARED = pytest.StashKey[_Shared]()


def _owner(request: pytest.FixtureRequest, scope: str) -> pytest.Item | pytest.Collector:
    """The node whose teardown ends a mock of `scope`."""
    if scope == "session":
        return request.session
    module = request.node.getparent(pytest.Module)
    assert module is not None, "a module-scoped tito_mock needs a test in a module"
    return module


@pytest.fixture
def tito_mock_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., TitoMock]]:
    """Start a mock: `tito_mock_factory(flags=[...], defects=[...], ttft_ms=..., itl_ms=...,
    vllm_version="0.31")`."""
    from mock_server.harness.tito_mock import MockSettings, TitoMock

    own: list[TitoMock] = []
    shared = request.config.stash.setdefault(_SHARED, _Shared())

    def make(*, scope: str = "function", **kwargs: Any) -> TitoMock:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, not {scope!r}")
        settings = MockSettings.of(**kwargs)
        if scope == "function":
            mock = TitoMock(settings).__enter__()
            own.append(mock)
            return mock
        owner = _owner(request, scope)
        key = (owner.nodeid, settings)
        if key not in shared.mocks:
            mock = shared.mocks[key] = TitoMock(settings).__enter__()

            def close(key: tuple[str, Any] = key, mock: TitoMock = mock) -> None:
                shared.mocks.pop(key, None)
                mock.close()

            owner.addfinalizer(close)
        return shared.mocks[key]

    try:
        yield make
    finally:
        for mock in own:
            mock.close()


@pytest.fixture
def tito_mock(
    request: pytest.FixtureRequest, tito_mock_factory: Callable[..., TitoMock]
) -> TitoMock:
    """The mock this test's `tito_mock` marker describes (scale-out, no defects by default)."""
    marker = request.node.get_closest_marker("tito_mock")
    return tito_mock_factory(**(marker.kwargs if marker else {}))


@pytest.fixture
def tito_transport(tito_mock: TitoMock) -> StreamingTransport:
    """`httpx.Client(transport=tito_transport, base_url=...)`: no socket, real streaming."""
    return tito_mock.transport()


@pytest.fixture
def tito_async_transport(tito_mock: TitoMock) -> AsyncStreamingTransport:
    """`httpx.AsyncClient(transport=tito_async_transport, ...)`: the async counterpart."""
    return tito_mock.async_transport()


@pytest.fixture
def tito_respx(tito_mock: TitoMock, respx_mock: Any) -> Any:
    """respx's router, with the TITO paths of `http://tito.mock` answered by `tito_mock`."""
    from mock_server.harness.respx_routes import add_routes

    add_routes(respx_mock, tito_mock)
    return respx_mock


@pytest.fixture
def tito_mock_fleet(request: pytest.FixtureRequest) -> Iterator[Fleet]:
    """Engines behind a router, as this test's `tito_mock_fleet` marker describes (two
    scale-out mocks behind vllm-router when it is found, else the kit's router); a test that
    asks for `router="vllm-router"` is skipped where it is not installed."""
    from mock_server.harness.fleet import RouterNotFound, start_fleet

    marker = request.node.get_closest_marker("tito_mock_fleet")
    try:
        fleet = start_fleet(**(marker.kwargs if marker else {}))
    except RouterNotFound as exc:
        pytest.skip(str(exc))
    with fleet:
        yield fleet
