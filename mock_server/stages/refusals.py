"""How a stage ends a request before its answer: what the route turns into an answer."""

from __future__ import annotations

from mock_server.wire.errors import ApiError

ENGINE_DEAD = "EngineCore encountered an issue. See stack trace (above) for the root cause."


class StreamedRejection(Exception):
    """An error of a streamed request answered as a 200 stream of one error event (a schema
    error under stream-schema-error-200, an engine-side check, a paused engine)."""

    def __init__(self, err: ApiError) -> None:
        super().__init__(err.message)
        self.err = err


class Fatal(Exception):
    """An error the engine does not survive (oov-token-500): answered, then the server dies,
    as a real vLLM's engine core does."""

    def __init__(self, err: ApiError) -> None:
        super().__init__(err.message)
        self.err = err
