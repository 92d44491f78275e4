"""`tito_vllm_server`: vLLM's own API server over the simulated core, for client tests.

Loaded through the `pytest11` entry point in every pytest run of a project that installs the
kit; it imports nothing heavy and starts nothing until a test asks for the fixture. The server
is started once per session and settings (installing a release takes a minute or two the first
time, starting it 15 s to 2 min on a loaded CPU), configured by
`@pytest.mark.tito_vllm_server(version="0.34.0", flags=["--enable-scale-out"], token_ms=10)`.
Where the release's environment cannot be built (no network to PyPI, no CPU torch wheel) the
test is skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from live.frontend.run import RealFrontend

MARKER = (
    "tito_vllm_server(version='0.34.0', flags=('--enable-scale-out',), token_ms=None): "
    "which vLLM release's own server (simulated engine core) tito_vllm_server starts"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


class _Servers:
    def __init__(self) -> None:
        self.by_settings: dict[Any, RealFrontend] = {}
        self.unavailable: dict[Any, str] = {}


_SERVERS = pytest.StashKey[_Servers]()


@pytest.fixture
def tito_vllm_server(request: pytest.FixtureRequest) -> Iterator[RealFrontend]:
    """A running `RealFrontend` (`.url`, `.api_key`, `.version`) shared by the session."""
    from live.frontend.run import FrontendUnavailable, RealFrontend
    from live.profiles import DEFAULT_FRONTEND_VERSION

    marker = request.node.get_closest_marker("tito_vllm_server")
    kwargs = dict(marker.kwargs) if marker else {}
    version = str(kwargs.pop("version", DEFAULT_FRONTEND_VERSION))
    flags = tuple(kwargs.pop("flags", ("--enable-scale-out",)))
    token_ms = kwargs.pop("token_ms", None)
    if kwargs:
        raise TypeError(f"tito_vllm_server marker: unknown arguments {sorted(kwargs)}")
    env = {} if token_ms is None else {"TITO_SIM_TOKEN_MS": str(token_ms)}
    servers = request.config.stash.setdefault(_SERVERS, _Servers())
    key = (version, flags, token_ms)
    if key in servers.unavailable:
        pytest.skip(servers.unavailable[key])
    if key not in servers.by_settings:
        server = RealFrontend(version, flags, env=env)
        try:
            server.start()
        except FrontendUnavailable as exc:
            servers.unavailable[key] = str(exc)
            pytest.skip(str(exc))
        servers.by_settings[key] = server
        request.session.addfinalizer(server.stop)
    yield servers.by_settings[key]
