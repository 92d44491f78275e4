"""Serving the kit's router: uvicorn on a loopback port in a thread of this process.

The router passes the engines' `server` and `date` headers through (uvicorn adds none of its
own), and an engine's stream that broke off (`UpstreamBroken`) ends the client's connection
without uvicorn's traceback: that is the instrument working, not failing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from loopback.timeouts import IN_PROCESS_POLL_S, IN_PROCESS_S, SHUTDOWN_GRACE_S
from mock_server.router.proxy import UpstreamBroken
from mock_server.serve.listening import listening

START_TIMEOUT = 10.0


class _QuietBreaks(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, UpstreamBroken)


def quiet_breaks() -> None:
    """Install (once) the filter that keeps uvicorn from logging a broken-off stream."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietBreaks) for f in logger.filters):
        logger.addFilter(_QuietBreaks())


def server_config(app: Any, host: str, port: int, log_level: str = "warning") -> Any:
    import uvicorn

    quiet_breaks()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        access_log=False,
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )


@contextmanager
def serving(app: Any, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """`app` served by uvicorn in a daemon thread; yields its base URL (port 0: a free one)."""
    import uvicorn

    server = uvicorn.Server(server_config(app, host, port))
    thread = threading.Thread(target=server.run, name="tito-router", daemon=True)
    thread.start()
    ready = threading.Event()
    for _ in range(int(START_TIMEOUT / 0.005)):
        if server.started or not thread.is_alive():
            break
        ready.wait(IN_PROCESS_POLL_S)
    if not server.started:
        server.should_exit = True
        raise RuntimeError(f"the kit's router did not start on {host}:{port}")
    with listening(server, host, lambda: thread.join(IN_PROCESS_S)) as url:
        yield url
