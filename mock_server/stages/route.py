"""POST /inference/v1/generate: the stages composed, and their early ends answered."""

from __future__ import annotations

from mock_server.answers.streaming import stream_single_error
from mock_server.endpoints.gating import send_error
from mock_server.endpoints.state import AppState
from mock_server.stages import admit, build, frame, gate, generate, parse, validate, write
from mock_server.stages.refusals import Fatal, StreamedRejection
from mock_server.wire.asgi import Disconnected, Receive, Scope, Send
from mock_server.wire.errors import ApiError, ValidationFailure


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
        except Fatal as fatal:
            await send_error(send, cfg, fatal.err)
            self.state.die()
        except ApiError as err:
            await send_error(send, cfg, err)
        except ValidationFailure as failure:
            await send_error(send, cfg, failure.to_api_error())

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        state, cfg = self.state, self.state.config
        if not await gate.passes(state, scope, receive, send):
            return
        req = await parse.read(cfg, scope, receive)
        validate.validate(cfg, scope, req)
        job = await admit.admit(state, scope, req)
        built = build.builder(state, job, req)
        if req.stream:  # generate, build, frame and write event by event
            await frame.stream(state, job, built, receive, send)
        elif await generate.complete(state, job, receive):  # else: the client went away
            await write.write(send, cfg, build.body(state, req, built))
