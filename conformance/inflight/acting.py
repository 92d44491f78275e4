"""Act on a request while it runs and time both: the kit's one in-flight routine, free of any
session. The suite's checks (`inflight.attempts`), the fuzzer's abort sequence and the diff's abort
flows all send through it, with the kit's client, over HTTP or into an in-process app.

A streamed request is read chunk by chunk (its events decoded as they complete, its bytes
kept); once `ready(line)` (by default: its first token), the action goes out by the id the
server named (or the request's own) while a reader keeps reading to the end. A non-streamed
request runs in a worker; `delay_s` after it was sent, the action goes out and repeats every
`every_s` until the answer comes (an early action may find no request to act on yet). Every
action and the request's end are recorded on a `Timeline`; `proof` judges what it shows.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from conformance.inflight.proof import engine_proof
from conformance.inflight.timeline import Timeline, token_count
from conformance.wire import Client, Reply, Stream, is_event_stream
from conformance.wire.bounded import EventReader, too_many
from conformance.wire.sender import MISSING

REPEAT_S = 0.005  # how often an action sent before the first token is repeated

Action = Callable[[str], Reply | None]
"""The action, given the request id to act on; its answer (None: it could not be sent)."""
Ready = Callable[[Timeline], bool]
Read = Callable[[str], dict[str, Any] | None]
"""One event's data as a chunk (None: not one); may raise to fail the caller."""
Witness = Callable[[str], bool | None]
"""Whether the engines still hold the request by this id (None: they cannot say)."""
WITNESS_READS = 8
"""The most reads of the engines per attempt: enough to see the request held before and after
an action, few enough not to load a slow server."""


def first_token(line: Timeline) -> bool:
    """The default moment to act: the request is provably generating."""
    return line.first_token_s is not None


def lenient(data: str) -> dict[str, Any] | None:
    """An event's JSON object, or None (a fuzzer or a diff judges the bytes afterwards)."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    return chunk if isinstance(chunk, dict) else None


def stream_acting(
    client: Client,
    line: Timeline,
    path: str,
    action: Action,
    *,
    own_id: str,
    body: Any = MISSING,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    auth: bool = True,
    deadline: float | None = None,
    early: bool = False,
    ready: Ready = first_token,
    read: Read = lenient,
    past_done: bool = False,
    witness: Witness | None = None,
) -> Timeline:
    """Stream a request and act on it once `ready(line)`, or (`early`, a request queued behind
    others carries no token until they end) as soon as the server accepted it, repeating until
    it ends. `past_done`: read the bytes to the end of the body, not only to `[DONE]`;
    `witness`: after each action, ask the engines whether they still hold the request. An
    answer that is not a 200 event stream is read whole, no action sent."""
    started = time.monotonic()

    def now() -> float:
        return time.monotonic() - started

    with client.stream(
        path, body, content=content, headers=headers, auth=auth, deadline=deadline
    ) as st:
        line.status, line.content_type = st.status, st.headers.get("content-type")
        line.exchange, line.early = st.exchange, early
        try:
            if st.status != 200 or not is_event_stream(st.headers):
                for _ in st.chunks():
                    pass
                line.ended_s = now()
                return line
            events = _recorded(st, line, now, read, past_done)
            if not early:
                for _ in events:
                    if ready(line):
                        break
                if not ready(line):
                    return line  # it ended first: nothing to act on
            failure: list[BaseException] = []

            def read_rest() -> None:
                try:
                    for _ in events:
                        pass
                except BaseException as exc:  # re-raised in the caller's thread
                    failure.append(exc)
                line.ended_s = now()

            # in a copy of this context: the stream's clock holds its reads there too
            reader = threading.Thread(
                target=contextvars.copy_context().run, args=(read_rest,), daemon=True
            )
            reader.start()
            try:
                act(line, action, now, reader if early else None, own_id, witness)
            finally:
                # Unbounded: the reader stops itself (the stream's deadline, one read's
                # timeout). Closing the stream under a live reader races the two threads
                # over its connection, which the pool may already have handed to the next
                # request (seen in CI: that request's read failed with EBADF).
                reader.join()
            if failure:
                raise failure[0]
        finally:
            line.raw = bytes(st.raw)
    return line


def _recorded(
    st: Stream, line: Timeline, now: Callable[[], float], read: Read, past_done: bool
) -> Iterator[None]:
    """Read the stream, recording each event on the line; yields after each one."""
    events = EventReader()
    for raw in st.chunks():
        for data in events.feed(raw):
            if line.done:
                continue  # past [DONE]: only its bytes are kept
            st.exchange.events.append(data)
            too_many(st.exchange, st.max_events)
            _keep(line, now(), data, read)
            yield
        if line.done and not past_done:
            break
    line.ended_s = line.ended_s if line.done and not past_done else now()


def _keep(line: Timeline, at: float, data: str, read: Read) -> None:
    line.events += 1
    if data == "[DONE]":
        line.done, line.ended_s = True, at
        return
    chunk = read(data)
    if chunk is None:
        return
    line.chunks.append((at, chunk))
    if line.first_token_s is None and token_count(chunk):
        line.first_token_s = at


def act(
    line: Timeline,
    action: Action,
    now: Callable[[], float],
    until: threading.Thread | None,
    own_id: str,
    witness: Witness | None = None,
) -> None:
    """Run the action once, or (`until`) every REPEAT_S while that reader runs; record each."""
    while True:
        request_id = line.named_id() or own_id
        sent = now()
        try:
            answer = action(request_id)
        finally:
            answered = now()
        _record(line, answer, sent, answered)
        _witnessed(line, witness, request_id, answer, now)
        if until is None:
            return
        until.join(REPEAT_S)
        if not until.is_alive():
            return


def _record(line: Timeline, answer: Reply | None, sent: float, answered: float) -> None:
    line.actions.append((sent, answered))
    if line.action_sent_s is None:
        line.action, line.action_sent_s, line.action_answered_s = answer, sent, answered


def _witnessed(
    line: Timeline,
    witness: Witness | None,
    request_id: str,
    answer: Reply | None,
    now: Callable[[], float],
) -> None:
    """After an answered action, read whether the engines still hold the request (recorded on
    the line for `proof.engine_proof`), at most WITNESS_READS times an attempt, and no more
    once a read held it after an action sent after an earlier read held it: that is proof."""
    if witness is None or answer is None or len(line.reads) >= WITNESS_READS:
        return
    if engine_proof(line.actions, line.reads, line.first_token_s) is not None:
        return
    sent = now()
    held = witness(request_id)
    if held is not None:
        line.reads.append((sent, now(), held))


def whole_acting(
    line: Timeline,
    send: Callable[[], Reply],
    action: Action,
    *,
    own_id: str,
    delay_s: float,
    every_s: float,
    timeout: float,
    witness: Witness | None = None,
) -> Reply:
    """Send a non-streamed request (`send`, in a worker); `delay_s` after it, run `action` and
    repeat it every `every_s` until the answer comes (`witness`: after each, ask the engines
    whether they still hold the request); the answer (raised: its failure)."""
    box: dict[str, Any] = {}
    started = time.monotonic()
    line.delay_s, line.every_s = delay_s, every_s

    def now() -> float:
        return time.monotonic() - started

    def run() -> None:
        line.request_sent_s = now()  # at the latest: the worker may start late on a busy client
        try:
            box["reply"] = send()
        except BaseException as exc:
            box["error"] = exc
        line.ended_s = now()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(delay_s)
    while worker.is_alive():
        sent = now()
        answer = action(own_id)
        answered = now()
        _record(line, answer, sent, answered)
        _witnessed(line, witness, own_id, answer, now)
        worker.join(every_s)
        if now() > timeout + 5:
            break
    worker.join(timeout)
    if "error" in box:
        raise box["error"]
    if "reply" not in box:
        raise AssertionError(f"the non-streamed request never answered within {timeout:g} s")
    reply: Reply = box["reply"]
    line.exchange = reply.exchange
    if reply.exchange.body_sent_at is not None:
        line.request_sent_s = reply.exchange.body_sent_at - started
    return reply
