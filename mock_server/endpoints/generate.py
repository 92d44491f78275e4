"""POST /inference/v1/generate."""

from __future__ import annotations

import asyncio
import json

from mock_server.answers.derender_mode import DerenderBuilder, DerenderLogprobs, engine_request
from mock_server.answers.payloads import Builder, plain_full
from mock_server.answers.streaming import stream_job, stream_single_error
from mock_server.endpoints.gating import send_disabled, send_error
from mock_server.endpoints.state import AppState
from mock_server.engine.core import Job
from mock_server.engine.logprobs import LogprobsRenderer, prompt_id_scores, prompt_logprobs
from mock_server.parsing import serving_checks as checks
from mock_server.parsing.request import GenerateRequest, parse_generate, parse_plain
from mock_server.transforms import apply_wire
from mock_server.wire.asgi import (
    Disconnected,
    Receive,
    Scope,
    Send,
    cancel,
    header,
    read_body,
    send_bytes,
    send_json,
    wait_disconnect,
)
from mock_server.wire.errors import ApiError, ValidationFailure
from mock_server.wire.jsonbody import parse_json

UNSUPPORTED_MEDIA = (
    "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed"
)
ENGINE_DEAD = "EngineCore encountered an issue. See stack trace (above) for the root cause."


def is_json_media(scope: Scope) -> bool:
    content_type = (header(scope, "content-type") or "").lower()
    return content_type.split(";", 1)[0].strip() == "application/json"


class StreamedRejection(Exception):
    """A schema error of a streamed request answered as a stream (stream-schema-error-200)."""

    def __init__(self, err: ApiError) -> None:
        super().__init__(err.message)
        self.err = err


class GenerateEndpoint:
    def __init__(self, state: AppState) -> None:
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cfg = self.state.config
        try:
            await self._handle(scope, receive, send)
        except Disconnected:
            return
        except StreamedRejection as rejection:
            await stream_single_error(send, cfg, rejection.err)
        except ApiError as err:
            await send_error(send, cfg, err)
        except ValidationFailure as failure:
            await send_error(send, cfg, failure.to_api_error())

    async def _read_request(self, scope: Scope, receive: Receive) -> GenerateRequest:
        cfg = self.state.config
        parse = cfg.policies.parse
        if not is_json_media(scope) and parse.media_type_checked:
            raise ApiError(400, UNSUPPORTED_MEDIA, "Bad Request")
        raw = await read_body(scope, receive, cfg.mock_max_body_bytes)
        try:
            body = parse_json(raw)
        except ValidationFailure:
            if parse.bad_json_status == 500:
                raise ApiError(500, "Internal Server Error", "InternalServerError") from None
            raise
        body = cfg.release.known(body)  # an older release ignores the fields it lacks
        try:
            return (cfg.fast.generate and parse_plain(body, cfg)) or parse_generate(body, cfg)
        except ValidationFailure as failure:
            streamed = isinstance(body, dict) and body.get("stream") is True
            if streamed and parse.schema_error_streamed:
                raise StreamedRejection(failure.to_api_error()) from None
            raise

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        state, cfg = self.state, self.state.config
        engine = state.engine
        gate = cfg.policies.gate
        if cfg.enable_scale_out and gate.generate_404:
            await send_json(send, 404, {"detail": "Not Found"})
            return
        gated = cfg.tokens_only and not cfg.enable_scale_out
        if not cfg.scale_out or (gated and gate.tokens_only_generate_disabled):
            if gate.disabled_validates_first:
                await self._read_request(scope, receive)
            await send_disabled(send, cfg)
            return
        if engine.dead:
            raise ApiError(500, ENGINE_DEAD, "InternalServerError")
        engine.received += 1
        forced = header(scope, "x-mock-return-error")
        if forced is not None and forced.strip().isdigit():
            status = int(forced.strip())
            raise ApiError(status, f"Injected by X-Mock-Return-Error: {status}")
        if gate.hang_generate:
            await wait_disconnect(receive)
            return
        req = await self._read_request(scope, receive)
        checks.serving_checks(req, cfg)
        rank = checks.dp_rank(scope, cfg)
        try:
            checks.engine_checks(req, cfg, rank)
        except ApiError as err:
            streams = "errors.streamed" in cfg.policies.validate.rules
            if req.stream and err.engine_side and streams:
                await stream_single_error(send, cfg, err)
                return
            raise
        if state.paused.mode is not None:  # 0.33+: a paused engine refuses what passed the checks
            try:
                await state.paused.admit()
            except ApiError as err:
                if req.stream:
                    await stream_single_error(send, cfg, err)
                    return
                raise
        if max(req.token_ids, default=0) >= cfg.mock_vocab_size:  # oov-token-500
            raise_after = ApiError(500, ENGINE_DEAD, "InternalServerError")
            await send_error(send, cfg, raise_after)
            state.die()
            return
        job = self._new_job(scope, req)
        builder = self._builder(job, req)
        gone = asyncio.Event()
        watcher: asyncio.Task[None] | None = None

        def watch() -> None:
            nonlocal watcher
            watcher = asyncio.create_task(self._watch(receive, job, gone))

        try:
            if req.stream:
                watch()
                await stream_job(send, cfg, engine, job, builder, gone)
                return
            if cfg.fast.generate:
                # The watcher starts when the engine first hands the loop over: a request
                # that completes in one go (most, without --mock-itl-ms) needs no task.
                await engine.complete(job, watch)
            else:
                watch()
                async for _ in engine.run(job):
                    pass
        finally:
            cancel(watcher)
        if gone.is_set():
            return
        plp = scores = None
        sampling = req.sampling
        start = (req.parsed or {}).get("prompt_logprob_start") or 0  # 0.34's, else a 400
        if sampling.prompt_logprobs is not None:
            plp = prompt_logprobs(
                cfg, engine.model, engine.tokenizer, req.token_ids, sampling.prompt_logprobs, start
            )
        if sampling.prompt_logprob_token_ids is not None:  # 0.34's, else a 400
            rows = sampling.prompt_logprob_token_ids
            scores = prompt_id_scores(engine.model, req.token_ids, rows, start)
        data = plain_full(builder) if cfg.fast.generate and plp is None and scores is None else None
        if data is None:
            body = builder.full(plp, scores)
            text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
            data = text.encode()
        await send_bytes(send, 200, apply_wire(cfg, data), cfg.policies.write.json_media)

    def _builder(self, job: Job, req: GenerateRequest) -> Builder:
        """The answer's builder: the output mode's (0.33+: "derender", `derender_mode`)."""
        cfg, tok = self.state.config, self.state.engine.tokenizer
        model = req.model or cfg.model_name
        if req.output_mode == "derender":
            return DerenderBuilder(cfg, job, DerenderLogprobs(cfg, tok, req), model)
        return Builder(cfg, job, LogprobsRenderer(cfg, tok, req.output_mode), model)

    def _new_job(self, scope: Scope, req: GenerateRequest) -> Job:
        cfg, engine = self.state.config, self.state.engine
        hdr = header(scope, "x-request-id")
        admit = cfg.policies.admit
        if not admit.request_id_header:
            hdr = None
        if admit.request_id_body_first:
            base = req.request_id or hdr
        else:
            base = hdr if hdr is not None else req.request_id
        if base is None:
            base = engine.new_request_id()
        abort_after = None
        raw = header(scope, "x-mock-abort-after-tokens")
        if raw is not None and raw.strip().isdigit():
            abort_after = int(raw.strip())
        return Job(
            request_id="generate-tokens-" + base,
            req=engine_request(req),  # derender runs as the text level
            max_tokens=checks.effective_max_tokens(req, cfg),
            abort_after=abort_after,
        )

    async def _watch(self, receive: Receive, job: Job, gone: asyncio.Event) -> None:
        await wait_disconnect(receive)
        gone.set()
        self.state.engine.client_gone(job.request_id)
        admit = self.state.config.policies.admit
        if admit.abort_on_whole_disconnect if not job.req.stream else admit.abort_on_disconnect:
            job.abort()
