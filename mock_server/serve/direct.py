"""The mock's Starlette app, with its hot route taken straight to its endpoint.

`POST /inference/v1/generate` is a raw ASGI endpoint: Starlette's part in answering it is
routing (a regular expression per route until one matches) and wrappers that do nothing for
it (the exception middleware: the endpoint answers its own errors). Taken on every request,
that was a tenth of a non-streamed answer's cost in the mock. The direct path keeps what acts
on that route: the API-key middleware and the last-resort 500 of ServerErrorMiddleware; any
other method, path or a mounted app (a root_path) goes through Starlette as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.errors import ServerErrorMiddleware

from mock_server.behaviour.config import MockConfig
from mock_server.serve.auth import AuthMiddleware
from mock_server.wire.asgi import ASGIApp, Receive, Scope, Send


class MockApp(Starlette):
    def __init__(self, config: MockConfig, direct: Mapping[str, ASGIApp], **kwargs: Any) -> None:
        """`direct`: POST endpoints by exact path, taken without Starlette's routing."""
        super().__init__(**kwargs)
        self._taken = config.fast.direct  # tests turn it off to compare with Starlette's
        self._direct = {
            path: ServerErrorMiddleware(AuthMiddleware(endpoint, config=config))
            for path, endpoint in direct.items()
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self._taken
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            endpoint = self._direct.get(scope["path"])
            if endpoint is not None:
                scope["app"] = self
                await endpoint(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
