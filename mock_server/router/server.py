"""Serving the kit's router: uvicorn on a loopback port in a thread of this process.

The router passes the engines' `server` and `date` headers through (uvicorn adds none of its
own), and an engine's stream that broke off (`UpstreamBroken`) ends the client's connection
without uvicorn's traceback: that is the instrument working, not failing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from loopback.in_process import in_thread
from loopback.timeouts import SHUTDOWN_GRACE_S
from mock_server.router.proxy import UpstreamBroken


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
    with in_thread(server_config(app, host, port), "the kit's router") as url:
        yield url
