"""Dev mode's `/pause`, `/resume` and `/is_paused`, as vLLM 0.33+ answers them.

From 0.33 a paused engine core refuses new requests (`EngineCore._reject_add_while_paused`):
in the `abort` and `wait` modes, until `/resume`, every request that reaches the engine after
its checks (generate, `/v1/completions`, `/v1/chat/completions`) is a 503 "Generation is
paused. Please retry after it resumes." (`RetryableRequestError`), a streamed one a 200 stream
of that one error event; render, derender, tokenize, abort, health and the weight routes are
untouched. `abort` aborts what runs, `wait` answers once it has finished, `keep` holds new
requests until `/resume`. Seen on a real 0.34.0 frontend (live/frontend), read in 0.33.0's.

Only a release that rejects (`Release.pause_rejects`) gets these routes: 0.32 queues new
requests while paused, which the mock does not play (DIFFERENCES.md row 32). Nor does it
freeze the requests in flight under `keep`: they run on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from loopback.timeouts import DRAIN_POLL_S
from mock_server.behaviour.config import MockConfig
from mock_server.endpoints.gating import answered
from mock_server.engine.core import Engine
from mock_server.wire.errors import ApiError, ValidationFailure, validation_item

MODES = ("abort", "wait", "keep")
PAUSED = "Generation is paused. Please retry after it resumes."
_TRUE = ("1", "true", "t", "yes", "y", "on")
_FALSE = ("0", "false", "f", "no", "n", "off")


@dataclass
class Paused:
    """The pause a server is in: its mode (None: running) and the resume its held wait for."""

    mode: str | None = None
    resumed: asyncio.Event = field(default_factory=asyncio.Event)

    def error(self) -> ApiError | None:
        """The 503 a new request gets (abort, wait), else None."""
        if self.mode in ("abort", "wait"):
            return ApiError(503, PAUSED, "ServiceUnavailableError", engine_side=True)
        return None

    async def admit(self) -> None:
        """Raise the 503 of a refusing pause, or wait out a `keep` one."""
        err = self.error()
        if err is not None:
            raise err
        while self.mode == "keep":
            await self.resumed.wait()


def _query(request: Request) -> tuple[str, bool]:
    """`mode` and `clear_cache` as FastAPI's `Query` parses them: pydantic's 400s."""
    errors = []
    mode = request.query_params.get("mode", "abort")
    if mode not in MODES:
        msg = "Input should be 'abort', 'wait' or 'keep'"
        ctx = {"expected": "'abort', 'wait' or 'keep'"}
        errors.append(validation_item("literal_error", "query.mode", msg, mode, ctx))
    raw = request.query_params.get("clear_cache", "true")
    if raw.lower() not in _TRUE + _FALSE:
        msg = "Input should be a valid boolean, unable to interpret input"
        errors.append(validation_item("bool_parsing", "query.clear_cache", msg, raw))
    if errors:
        raise ValidationFailure(errors)
    return mode, raw.lower() in _TRUE


def pause_routes(cfg: MockConfig, engine: Engine, paused: Paused) -> list[Route]:
    """Takes the parts, not the `AppState` that holds a `Paused`: no import cycle."""

    async def pause(request: Request) -> JSONResponse:
        mode, _ = _query(request)  # clear_cache: deprecated, nothing to clear here
        paused.mode = mode
        paused.resumed.clear()
        if mode == "abort":
            engine.abort_all()
        elif mode == "wait":
            while engine.in_flight:
                await asyncio.sleep(DRAIN_POLL_S)
        return JSONResponse({"status": "paused"})

    async def resume(request: Request) -> JSONResponse:
        paused.mode = None
        paused.resumed.set()
        engine.resumed()
        return JSONResponse({"status": "resumed"})

    async def is_paused(request: Request) -> JSONResponse:
        return JSONResponse({"is_paused": paused.mode is not None})

    return [
        Route("/pause", answered(cfg, pause), methods=["POST"]),
        Route("/resume", resume, methods=["POST"]),
        Route("/is_paused", is_paused, methods=["GET"]),
    ]
