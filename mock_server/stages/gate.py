"""The gate stage: whether generate is served at all, before its body is read."""

from __future__ import annotations

from mock_server.endpoints.gating import send_disabled
from mock_server.endpoints.state import AppState
from mock_server.stages import parse
from mock_server.stages.refusals import ENGINE_DEAD
from mock_server.wire.asgi import Receive, Scope, Send, header, send_json, wait_disconnect
from mock_server.wire.errors import ApiError


async def passes(state: AppState, scope: Scope, receive: Receive, send: Send) -> bool:
    """True if the request goes on; False once the gate has answered it (a route the server
    lacks, the disabled answer, a hung request's hang-up); an error it raises (a dead engine,
    X-Mock-Return-Error) is answered by the route."""
    cfg, engine = state.config, state.engine
    gate = cfg.policies.gate
    if cfg.enable_scale_out and gate.generate_404:
        await send_json(send, 404, {"detail": "Not Found"})
        return False
    gated = cfg.tokens_only and not cfg.enable_scale_out
    if not cfg.scale_out or (gated and gate.tokens_only_generate_disabled):
        if gate.disabled_validates_first:
            await parse.read(cfg, scope, receive)
        await send_disabled(send, cfg)
        return False
    if engine.dead:
        raise ApiError(500, ENGINE_DEAD, "InternalServerError")
    engine.received += 1
    forced = header(scope, "x-mock-return-error")
    if forced is not None and forced.strip().isdigit():
        status = int(forced.strip())
        raise ApiError(status, f"Injected by X-Mock-Return-Error: {status}")
    if gate.hang_generate:
        await wait_disconnect(receive)
        return False
    return True
