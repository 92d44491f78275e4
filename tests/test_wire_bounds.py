"""Every bound of the wire, each against the hostile server that crosses it (issue 38): what an
answer may take once decoded, one stream line, a stream's events, its nesting and its wall
clock, each at every socket read. What crosses a bound is the server's failure (`ServerBroke`,
with the bound in its message); the run's own clock running out is the harness's
(`OutOfTime`), never a FAIL."""

from __future__ import annotations

import gzip
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator

import httpx
import pytest

from conformance.grounds.verdict import Ran, decide
from conformance.outcomes import Status
from conformance.wire import MAX_BODY, MAX_EVENTS, Client, ServerBroke
from conformance.wire.bounded import MAX_LINE, EventReader, PastDeadline, events_for
from conformance.wire.faults import OutOfTime
from conformance.wire.inflate import ACCEPT_ENCODING, RAW_STEP, decoded
from conformance.wire.nesting import MAX_DEPTH, depth, too_deep
from tests.hostile_servers import DEPTH, serving

GENERATE = "/inference/v1/generate"
STREAMED = {"token_ids": [1], "sampling_params": {"max_tokens": 4}, "stream": True}


def _peak_mib(call: Callable[[], object]) -> tuple[float, ServerBroke]:
    """The most Python memory `call()` held at once, in MiB, and the ServerBroke it raised."""
    tracemalloc.start()
    try:
        with pytest.raises(ServerBroke) as raised:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1024 / 1024, raised.value


def test_a_gzip_bomb_stops_at_the_cap_once_decoded() -> None:
    """6 GiB of gzip'd whitespace: read to 8 MiB decoded, a few KiB of its 6 MB on the wire,
    never a step of 64 MiB inflated at once (what httpx's whole-read decode did)."""
    with serving("gzip-bomb") as url:
        client = Client(url, timeout=5.0)
        try:
            peak, broke = _peak_mib(lambda: client.post(GENERATE, {"token_ids": [1]}))
        finally:
            client.close()
    assert f"passed {MAX_BODY // 2**20} MiB (decoded)" in str(broke)
    assert peak < 2 * MAX_BODY / 2**20 + 4, f"{peak:.0f} MiB held to read an 8 MiB cap"


class _Sent(httpx.SyncByteStream):
    """An answer's raw body as a server sends it: 64 KiB reads, not yet read."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __iter__(self) -> Iterator[bytes]:
        for at in range(0, len(self.raw), 65536):
            yield self.raw[at : at + 65536]


def _answer(raw: bytes, coding: str | None = None) -> httpx.Response:
    headers = {"content-encoding": coding} if coding else {}
    asked = httpx.Request("GET", "http://tito.test")
    return httpx.Response(200, headers=headers, stream=_Sent(raw), request=asked)


def test_decoding_goes_a_bounded_step_at_a_time() -> None:
    raw = gzip.compress(b" " * (64 * 1024 * 1024))
    pieces = [len(piece) for piece in decoded(_answer(raw, "gzip"))]
    assert sum(pieces) == 64 * 1024 * 1024
    assert max(pieces) <= 1032 * RAW_STEP + 1024  # deflate inflates at most ~1,032-fold
    assert b"".join(decoded(_answer(b"{}"))) == b"{}"


@pytest.mark.parametrize(
    ("coding", "said"),
    [("br", "did not accept"), ("zstd", "did not accept"), ("gzip, gzip", "stacked")],
)
def test_a_coding_that_cannot_be_inflated_within_a_bound_is_refused(coding: str, said: str) -> None:
    """Brotli inflates ~600,000-fold (one step could be GiBs), and stacked codings multiply:
    the client asks for neither, and an answer in them is the server's failure."""
    assert "br" not in ACCEPT_ENCODING
    with pytest.raises(ServerBroke, match=said):
        list(decoded(_answer(b"x", coding)))


def test_one_endless_sse_line_is_cut_at_the_line_cap() -> None:
    """One 100 MB `data:` line: stopped once it passes MAX_LINE, never joined whole."""
    with serving("sse-line") as url:
        client = Client(url, timeout=5.0)
        try:

            def read() -> None:
                with client.stream(GENERATE, STREAMED) as stream:
                    list(stream.events())

            peak, broke = _peak_mib(read)
        finally:
            client.close()
    assert f"a stream line passed {MAX_LINE // 2**20} MiB unended" in str(broke)
    assert peak < 4 * MAX_LINE / 2**20, f"{peak:.0f} MiB held for one line"


def test_json_nested_100000_deep_is_refused_before_it_is_decoded() -> None:
    """A RecursionError out of `json.loads` was a harness error (exit 2); it is the server's
    failure, said before anything parses the body (schemathesis's checks included)."""
    with serving("deep-json") as url:
        client = Client(url, timeout=5.0)
        try:
            with pytest.raises(ServerBroke, match=f"nests {DEPTH} arrays/objects deep"):
                client.post(GENERATE, {"token_ids": [1]})
            assert client.log[-1].error.startswith("the body nests")
            with (
                pytest.raises(ServerBroke, match="stream event #1 nests"),
                client.stream(GENERATE, STREAMED) as stream,
            ):
                list(stream.events())
        finally:
            client.close()
    reader = EventReader()
    with pytest.raises(ServerBroke, match="stream event #1 nests"):
        reader.feed(b"data: " + b"{" * 100 + b"\n\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{"a": [1, 2, {"b": null}]}', 3),
        (b'{"a": "[[[[[[ not nesting ]]]]]] \\" [[[ still text"}', 1),
        (b"data: {}\n\ndata: [1]\n\n", 1),  # SSE data lines, each its own text
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), MAX_DEPTH + 1),
        (b"[" * DEPTH, DEPTH),  # unclosed: every reader would still descend
    ],
)
def test_nesting_is_counted_outside_strings(text: bytes, expected: int) -> None:
    found = depth(text)
    assert found == expected or (expected <= MAX_DEPTH and found <= MAX_DEPTH)
    assert (too_deep(text) is not None) is (expected > MAX_DEPTH)


def test_a_flat_body_of_many_brackets_is_not_too_deep() -> None:
    """A large correct answer (20,000 logprob entries, 8 levels) passes, strings and all."""
    entry = '{"token_id": 1, "logprob": -0.5, "token": "a]}b", "top_logprobs": [{"token_id": 2}]}'
    body = '{"choices": [{"logprobs": {"content": [' + ",".join([entry] * 20_000) + "]}}]}"
    assert depth(body.encode()) == 8  # the deepest a TITO answer goes
    assert too_deep(body) is None


@pytest.mark.parametrize("mode", ["endless-paced", "endless-stream"])
def test_an_endless_stream_ends_at_its_events_or_its_deadline(mode: str) -> None:
    """Valid chunks forever, never [DONE]: a request that names n and max_tokens is cut once
    it sent more events than those can produce; one that does not, at MAX_EVENTS (a flood)
    or at its wall clock (paced), each saying so."""
    asked = {**STREAMED, "sampling_params": {"max_tokens": 4, "n": 2}}
    unsized = {"token_ids": [1], "stream": True}
    with serving(mode) as url:
        client = Client(url, timeout=2.0)
        try:
            with (
                pytest.raises(ServerBroke, match="more than 28 events without ending, no") as sized,
                client.stream(GENERATE, asked) as stream,
            ):
                list(stream.events())
            assert "more than its request can produce" in str(sized.value)
            started = time.monotonic()
            with (
                pytest.raises(ServerBroke) as raised,
                client.stream(GENERATE, unsized, deadline=1.0) as stream,
            ):
                list(stream.events())
            took = time.monotonic() - started
        finally:
            client.close()
    if mode == "endless-paced":
        assert isinstance(raised.value, PastDeadline)
        assert "did not end within 1 s (" in str(raised.value)
        assert "events, no [DONE])" in str(raised.value)
        assert took < 3.0, took
    else:  # whichever comes first on this machine
        assert isinstance(raised.value, PastDeadline) or (
            f"more than {MAX_EVENTS} events without ending, no [DONE]" in str(raised.value)
        )


def test_the_event_cap_sits_above_what_a_request_can_produce() -> None:
    assert events_for({"sampling_params": {"max_tokens": 4, "n": 2}}) == 2 * (4 + 2) + 16
    assert events_for({"sampling_params": {"max_tokens": 10**9}}) == MAX_EVENTS
    for unsized in ({}, {"sampling_params": {"n": 2}}, None, {"sampling_params": "x"}):
        assert events_for(unsized) == MAX_EVENTS


@pytest.fixture
def trickling() -> Iterator[tuple[str, threading.Event]]:
    """A server that sends an answer's head (or, once `body` is set, its body) a byte every
    0.2 s: every read is within any timeout, the answer never ends."""
    body = threading.Event()
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed: the test is over
                return
            threading.Thread(target=talk, args=(conn,), daemon=True).start()

    def talk(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            out = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" if body.is_set() else b""
            try:
                conn.sendall(out)
                while not stop.wait(0.2):
                    conn.sendall(b" " if body.is_set() else b"X")
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", body
    finally:
        stop.set()
        listener.close()


def test_a_trickled_head_ends_at_the_exchanges_deadline(
    trickling: tuple[str, threading.Event],
) -> None:
    """httpx's read timeout bounds one read: a byte every 0.2 s kept a 1 s timeout waiting
    for as long as the server liked. The exchange's clock holds at every socket read."""
    url, _ = trickling
    client = Client(url, timeout=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(ServerBroke, match="no complete answer within 1 s") as raised:
            client.post(GENERATE, {"token_ids": [1]})
        took = time.monotonic() - started
    finally:
        client.close()
    assert raised.value.timed_out
    assert took < 2.0, f"a trickled head held the client {took:.1f} s"


def test_a_trickled_body_ends_at_its_deadline(trickling: tuple[str, threading.Event]) -> None:
    url, body = trickling
    body.set()
    client = Client(url, timeout=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(PastDeadline, match="HTTP 200 came, but its body did not end within"):
            client.post(GENERATE, {"token_ids": [1]})
        took = time.monotonic() - started
    finally:
        client.close()
    assert took < 4.0, f"a trickled body held the client {took:.1f} s"  # head + 2x the timeout


def test_the_runs_deadline_is_the_harnesss_not_the_servers() -> None:
    """Past the run's deadline nothing is sent, and what is in flight is cut at it: both are
    `OutOfTime`, which no check turns into a FAIL."""
    with serving("hang") as url:
        client = Client(url, timeout=5.0)
        try:
            client.ends = time.monotonic() - 1
            with pytest.raises(OutOfTime, match="was not sent"):
                client.post(GENERATE, {"token_ids": [1]})
            client.ends = time.monotonic() + 0.5
            started = time.monotonic()
            with pytest.raises(OutOfTime, match="while it was in flight"):
                client.post(GENERATE, {"token_ids": [1]})
            assert time.monotonic() - started < 2.0
        finally:
            client.close()
    assert not issubclass(OutOfTime, AssertionError)
    ran = Ran("test_x.py::test_y", ("GEN-001",), "call", OutOfTime("the run's deadline passed"))
    assert decide(None, ran).status is Status.ERROR


def test_a_budget_cuts_every_wait_and_then_refuses() -> None:
    """The probe's budget: each request waits no longer than what is left of it, and once it
    is spent a request is the server's no-answer (`timed_out`), not sent."""
    with serving("hang") as url:
        client = Client(url, timeout=5.0, stop_after=None)
        try:
            started = time.monotonic()
            with client.budget(1.0, "the test's budget"):
                with pytest.raises(ServerBroke, match="no complete answer"):
                    client.post(GENERATE, {"token_ids": [1]}, timeout=30.0)
                with pytest.raises(ServerBroke, match="the test's budget was spent") as raised:
                    client.post(GENERATE, {"token_ids": [1]})
            assert raised.value.timed_out
            assert time.monotonic() - started < 2.5
        finally:
            client.close()
