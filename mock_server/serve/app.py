"""The ASGI application: routing, middleware and the small informational endpoints."""

from __future__ import annotations

import secrets
import time
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mock_server.behaviour.config import MockConfig
from mock_server.endpoints import mock_stats
from mock_server.endpoints.abort import AbortEndpoint, DevAbortEndpoint
from mock_server.endpoints.dev import dev_endpoints
from mock_server.endpoints.metrics import CONTENT_TYPE, prometheus_text
from mock_server.endpoints.pause import pause_routes
from mock_server.endpoints.state import AppState
from mock_server.engine.core import Engine
from mock_server.rendering.derender import derender_routes
from mock_server.rendering.openai_compat import openai_routes
from mock_server.rendering.render import render_routes
from mock_server.rendering.render_apis import render_api_routes
from mock_server.rendering.tokenize import tokenize_routes
from mock_server.serve.auth import AuthMiddleware
from mock_server.serve.direct import MockApp
from mock_server.stages.route import GenerateEndpoint


def _permission(now: int) -> dict[str, Any]:
    """vLLM's ModelPermission defaults: one object per model card, a fresh id each time."""
    return {
        "id": f"modelperm-{secrets.token_hex(8)}",
        "object": "model_permission",
        "created": now,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


def create_app(config: MockConfig) -> Starlette:
    """A pure ASGI app; streaming and disconnects also work over httpx.ASGITransport."""
    state = AppState(config=config, engine=Engine(config))
    generate = GenerateEndpoint(state)

    async def health(request: Request) -> Response:
        # vLLM answers 503 once its engine is dead (EngineDeadError), until the process exits.
        return Response(status_code=503 if state.engine.dead else 200)

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(state.engine.stats())

    async def metrics(request: Request) -> Response:
        text = prometheus_text(state.engine.counts(), config.model_name)
        return Response(text, headers={"content-type": CONTENT_TYPE})

    async def version(request: Request) -> JSONResponse:
        return JSONResponse({"version": config.release.version})

    async def models(request: Request) -> JSONResponse:
        now = int(time.time())
        data: list[dict[str, Any]] = [
            {
                "id": name,
                "object": "model",
                "created": now,
                "owned_by": "vllm",
                "root": name,
                "parent": None,
                "max_model_len": config.max_model_len,
                "permission": [_permission(now)],
            }
            for name in config.served_model_name
        ]
        return JSONResponse({"object": "list", "data": data})

    routes: list[Route] = [
        Route("/health", health, methods=["GET"]),
        Route(mock_stats.PATH, stats, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/version", version, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
    ]
    scale_out: list[Route] = [Route("/inference/v1/generate", generate, methods=["POST"])]
    abort = Route("/inference/v1/abort_requests", AbortEndpoint(state), methods=["POST"])
    if not config.release.abort_route:  # 0.30, 0.31: the route does not exist (404)
        state.unrouted.append(abort.path)
    elif config.policies.gate.abort_route:
        scale_out.append(abort)
    if config.policies.gate.render_routes:
        scale_out += render_routes(state) + render_api_routes(state) + derender_routes(state)
    if config.scale_out or config.release.gated:
        routes += scale_out
    else:  # 0.30, 0.31 without the flags: not registered, Starlette's 404 whatever the body
        state.unrouted += [r.path for r in scale_out]
    routes += tokenize_routes(state) + openai_routes(state)
    if config.dev_mode:
        update, finish, info = dev_endpoints(state)
        routes += [
            Route("/abort_requests", DevAbortEndpoint(state), methods=["POST"]),
            Route("/update_weight_version", update, methods=["POST"]),
            Route("/finish_weight_update", finish, methods=["POST"]),
            Route("/weight_info", info, methods=["GET"]),
        ]
        if config.release.pause_rejects:
            routes += pause_routes(state.config, state.engine, state.paused)
    elif config.tokens_only or config.policies.gate.legacy_abort_everywhere:
        routes.append(Route("/abort_requests", AbortEndpoint(state, legacy=True), methods=["POST"]))
    served = {route.path for route in routes}  # a release may leave generate unregistered
    direct = {path: generate for path in ("/inference/v1/generate",) if path in served}
    app = MockApp(
        config,
        direct,
        routes=routes,
        middleware=[Middleware(AuthMiddleware, config=config)],
        exception_handlers={HTTPException: _http_exception},
    )
    app.state.mock = state
    return app
