"""Abort a streamed generate while it is in flight, through the suite's in-flight routine
(`acting.stream_acting`) and the kit's client: the stream is read chunk by chunk, the abort
goes out by the id the server named once the first token arrived, and the stream is read to
the end of its body (its framing is judged afterwards).

schemathesis delivers a response only once it is complete, too late to abort it; the kit's
client streams, over HTTP or, in-process, through the kit's one streaming ASGI transport
(`openapi.asgi_transport`), which hands the body on as the app sends it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.inflight import script
from conformance.inflight.acting import Witness, stream_acting
from conformance.inflight.proof import engine_proof
from conformance.inflight.timeline import Timeline, ids_for
from conformance.wire import DEFAULT_TIMEOUT_S, IN_PROCESS_URL, Client, Reply

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"


@dataclass
class Outcome:
    """What one stream-then-abort attempt saw."""

    status: int = 0
    stream: bytes = b""
    request_id: str | None = None
    abort_status: int | None = None
    abort_body: bytes = b""
    error: str = ""
    abort_sent_s: float | None = None
    """Seconds from the request to its first token (the abort goes out then, by the id the
    server named), to the abort's answer, and to the stream's end."""
    abort_answered_s: float | None = None
    ended_s: float | None = None
    held: str = ""
    """The engines' word that the abort reached the stream while they held it
    (`proof.engine_proof`), where they name what they hold."""
    line: Timeline | None = field(default=None, repr=False, compare=False)
    """The attempt itself: its reproducer is a script of it (`inflight.script.of_line`)."""

    def script(self, what: str, evidence: str = "") -> str:
        """The attempt as a shell script that sends the stream and its abort again (empty when
        no abort went out)."""
        return script.of_line(what, self.line, evidence) if self.line is not None else ""

    @classmethod
    def of(cls, line: Timeline) -> Outcome:
        def at(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        action = line.action
        return cls(
            status=line.status,
            stream=line.raw,
            request_id=line.named_id(),
            abort_status=action.status if action is not None else None,
            abort_body=action.body if action is not None else b"",
            abort_sent_s=at(line.action_sent_s),
            abort_answered_s=at(line.action_answered_s),
            ended_s=at(line.ended_s),
            held=engine_proof(line.sent(), line.reads, line.first_token_s) or "",
            line=line,
        )


def _named(line: Timeline) -> bool:
    """Act once the stream is provably generating and has said which id to abort."""
    return line.first_token_s is not None and line.named_id() is not None


def stream_then_abort(
    body: dict[str, Any],
    headers: dict[str, str],
    auth: dict[str, str],
    *,
    client: Client | None = None,
    app: Any = None,
    base_url: str = "",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    deadline_s: float | None = None,
    witness: Witness | None = None,
) -> Outcome:
    """One attempt through `client` (or one made for `app` / `base_url`); never raises (a
    timeout or a broken connection is `Outcome.error`). `headers` go with the stream, `auth`
    with the abort; `deadline_s`: the stream's wall clock (default: the client's budget);
    `witness`: whether the engines still hold the stream after its abort was answered."""
    own = client or Client(
        IN_PROCESS_URL if app is not None else base_url,
        timeout=timeout_s,
        app=app,
        stop_after=None,
        keep_log=False,
    )
    tokens = body.get("sampling_params", {}).get("max_tokens") if isinstance(body, dict) else 0
    line = Timeline(tokens if isinstance(tokens, int) else 0, str(body.get("request_id", "")))

    def abort(request_id: str) -> Reply:
        return own.post(ABORT, {"request_ids": ids_for(request_id)}, headers=auth, auth=False)

    try:
        stream_acting(
            own,
            line,
            GENERATE,
            abort,
            own_id="",
            body=body,
            headers=headers,
            auth=False,
            deadline=deadline_s,
            ready=_named,
            past_done=True,
            witness=witness,
        )
    except Exception as exc:
        out = Outcome.of(line)
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    finally:
        if client is None:
            own.close()
    return Outcome.of(line)
