"""One mock for a client author's tests: a loopback port, streaming transports, stats, reset.

Everything a `TitoMock` offers drives the same app on the same event loop (an anyio blocking
portal in a thread), so `/mock/stats` counts every request whichever way it came in, and an
abort sent over the socket reaches a stream read through a transport. The loopback server is
started on first use of `base_url`: a test that only uses the transports opens no socket.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from loopback.in_process import listening
from loopback.timeouts import IN_PROCESS_POLL_S, IN_PROCESS_S
from mock_server.behaviour.config import MockConfig, parse_args
from mock_server.behaviour.defects import DEFECTS
from mock_server.endpoints.mock_stats import read_stats
from mock_server.engine.core import Engine
from mock_server.serve.app import create_app
from openapi.asgi_transport import AsyncStreamingTransport, StreamingTransport

DEFAULT_FLAGS = ("--enable-scale-out",)
"""A client author wants a server that generates; `--no-enable-scale-out` undoes it."""


class MockOptions(TypedDict, total=False):
    """`MockSettings.of`'s keywords beside the flags, for callers that pass them through."""

    defects: Iterable[str]
    ttft_ms: float | None
    itl_ms: float | None
    env: Mapping[str, str] | None
    vllm_version: str | None


@dataclass(frozen=True)
class MockSettings:
    """How one mock is started: `tito-mock` flags, defects by name, latency, environment, and
    the vLLM release it answers as (`vllm_version`: a key of
    `mock_server.behaviour.releases.RELEASES`; None: its `DEFAULT`)."""

    flags: tuple[str, ...] = ()
    defects: tuple[str, ...] = ()
    ttft_ms: float | None = None
    itl_ms: float | None = None
    env: tuple[tuple[str, str], ...] = ()
    vllm_version: str | None = None

    @classmethod
    def of(
        cls,
        flags: Iterable[str] = (),
        defects: Iterable[str] = (),
        ttft_ms: float | None = None,
        itl_ms: float | None = None,
        env: Mapping[str, str] | None = None,
        vllm_version: str | None = None,
    ) -> MockSettings:
        env_items = tuple(sorted((env or {}).items()))
        return cls(tuple(flags), tuple(defects), ttft_ms, itl_ms, env_items, vllm_version)

    def argv(self) -> list[str]:
        argv = [*DEFAULT_FLAGS, *self.flags]
        for name in self.defects:
            argv += ["--mock-defect", name]
        if self.ttft_ms is not None:
            argv += ["--mock-ttft-ms", str(self.ttft_ms)]
        if self.itl_ms is not None:
            argv += ["--mock-itl-ms", str(self.itl_ms)]
        if self.vllm_version is not None:
            argv += ["--mock-vllm-version", self.vllm_version]
        return argv

    def config(self) -> MockConfig:
        """The parsed config; a bad flag or defect is a ValueError, not argparse's exit."""
        unknown = [d for d in self.defects if d not in DEFECTS]
        if unknown:
            raise ValueError(f"unknown defect(s) {unknown}: `tito-mock --mock-defect list`")
        try:
            return parse_args(self.argv(), dict(self.env))
        except SystemExit as exc:
            raise ValueError(f"tito-mock rejected {self.argv()} (see stderr)") from exc


@dataclass
class TitoMock:
    """A running mock; use as a context manager (or `close()`), which always tears it down."""

    settings: MockSettings = field(default_factory=MockSettings)

    def __post_init__(self) -> None:
        self.config = self.settings.config()
        self.app = create_app(self.config)
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._base_url: str | None = None

    # -- lifetime ----------------------------------------------------------------------
    def __enter__(self) -> TitoMock:
        self.portal  # noqa: B018 - start the loop now, not inside the first request
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()
        self._portal, self._base_url = None, None

    @property
    def portal(self) -> BlockingPortal:
        """The mock's event loop, started on first use."""
        if self._portal is None:
            portal = self._portal = self._stack.enter_context(start_blocking_portal())
            # Requests still running at close (a stream never closed, hang-generate) are
            # cancelled: the portal would otherwise wait for them, maybe forever.
            self._stack.callback(_cancel_remaining, portal)
        return self._portal

    # -- ways in -----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` of a real uvicorn server on a loopback port (started once)."""
        if self._base_url is None:
            self._base_url = self._stack.enter_context(loopback(self.app, self.portal))
        return self._base_url

    def url(self, path: str) -> str:
        return self.base_url + path

    def transport(self) -> StreamingTransport:
        return StreamingTransport(self.app, self.portal)

    def async_transport(self) -> AsyncStreamingTransport:
        return AsyncStreamingTransport(self.app, self.portal)

    # -- what it saw -------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """What `GET /mock/stats` answers: received, in_flight, queued, finished, aborted,
        held (the ids of the requests it holds), hung_up (held ones whose client went away)."""
        with httpx.Client(transport=self.transport(), base_url="http://tito.mock") as client:
            return read_stats(client)

    def reset(self) -> None:
        """Forget every request (counters, weight label, sampling state) as a restart would;
        requests still running are aborted first."""

        def fresh() -> None:
            state = self.app.state.mock
            state.engine.abort_all()
            state.engine = Engine(self.config)

        self.portal.call(fresh)


def _cancel_remaining(portal: BlockingPortal) -> None:
    with contextlib.suppress(RuntimeError):  # already stopped
        portal.call(portal.stop, True)


@contextlib.contextmanager
def loopback(app: Any, portal: BlockingPortal) -> Iterator[str]:
    """uvicorn on a free loopback port, served from the portal's loop; yields its base URL.
    A fatal defect (oov-token-500) stops it, as it ends a real vLLM."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False
        )
    )
    app.state.mock.on_fatal.append(lambda: setattr(server, "should_exit", True))
    served = portal.start_task_soon(server.serve)
    portal.call(_until_started, server)
    with listening(server, "127.0.0.1", lambda: served.result(IN_PROCESS_S)) as url:
        yield url


async def _until_started(server: Any) -> None:
    import anyio

    with anyio.fail_after(IN_PROCESS_S):
        while not server.started:
            await anyio.sleep(IN_PROCESS_POLL_S)
