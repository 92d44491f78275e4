"""vLLM's API-key middleware: Bearer key on /v1, /v2, /inference, /cohere; flat 401 body."""

from __future__ import annotations

import hashlib
import hmac

from mock_server.behaviour.config import MockConfig
from mock_server.transforms import apply_status
from mock_server.wire.asgi import ASGIApp, Receive, Scope, Send, header, send_json

GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")


class AuthMiddleware:
    def __init__(self, app: ASGIApp, config: MockConfig) -> None:
        self.app = app
        self.cfg = config
        self._digests = [hashlib.sha256(k.encode()).digest() for k in config.api_keys]
        self._overrides = dict(config.policies.gate.guarded)  # path -> guarded or not
        self._checked = config.policies.gate.api_key_checked

    def _guarded(self, path: str) -> bool:
        override = self._overrides.get(path)
        return path.startswith(GUARDED_PREFIX) if override is None else override

    def _authorised(self, scope: Scope) -> bool:
        value = header(scope, "authorization") or ""
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer":
            return False
        digest = hashlib.sha256(token.strip().encode()).digest()
        return any(hmac.compare_digest(digest, d) for d in self._digests)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self._digests
            and scope.get("method") != "OPTIONS"
            and self._checked
            and self._guarded(scope["path"])
            and not self._authorised(scope)
        ):
            status, body = apply_status(self.cfg, "unauthorized", 401, {"error": "Unauthorized"})
            await send_json(send, status, body)
            return
        await self.app(scope, receive, send)
