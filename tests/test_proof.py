"""The one proof obligation of in-flight verdicts (`conformance.inflight.proof`): a FAIL rests only
on evidence a slower client cannot manufacture, and every in-flight requirement says which."""

from __future__ import annotations

import pytest

from conformance.inflight.proof import SAMPLES, SHARE, Fastest, Proof, bound_proof, engine_proof
from conformance.requirements import by_id

IN_FLIGHT = {
    "ABORT-002": {Proof.STATEMENT, Proof.ENGINE, Proof.BOUND},
    "ABORT-003": {Proof.STATEMENT, Proof.ENGINE, Proof.BOUND},
    "ABORT-004": {Proof.STATEMENT},
    "ABORT-007": {Proof.STATEMENT, Proof.BOUND},
    "ABORT-009": {Proof.ENGINE, Proof.BOUND},
    "ABORT-010": {Proof.ENGINE, Proof.BOUND},
    "ROUTER-001": {Proof.STATEMENT, Proof.BOUND},
    "ROUTER-002": {Proof.STATEMENT, Proof.BOUND},
    "ROUTER-003": {Proof.ENGINE, Proof.BOUND},
    "ROUTER-004": {Proof.ENGINE, Proof.BOUND},
    "WV-009": {Proof.STATEMENT, Proof.BOUND},
}


def test_every_in_flight_requirement_states_its_evidence_as_data() -> None:
    found = {r.id: set(r.proofs) for r in by_id().values() if r.proofs}
    assert found == IN_FLIGHT
    assert all(by_id()[rid].proofs for rid in IN_FLIGHT)


def test_an_action_answered_before_half_the_fastest_completion_proves_it_reached_the_request() -> (
    None
):
    proof = bound_proof([(0.010, 0.020)], 0.005, 0.100)
    assert proof is not None and "50 ms" in proof and "100 ms" in proof


def test_late_answers_unknown_requests_and_unmeasured_shapes_prove_nothing() -> None:
    assert bound_proof([(0.010, 0.051)], 0.005, 0.100) is None  # past SHARE of 100 ms
    assert bound_proof([(0.001, 0.002)], 0.005, 0.100) is None  # sent before it was known
    assert bound_proof([(0.010, 0.020)], None, 0.100) is None
    assert bound_proof([(0.010, 0.020)], 0.005, None) is None
    assert bound_proof([], 0.005, 0.100) is None
    assert SHARE <= 0.5, "the bound errs toward 'could have ended'"


def test_a_slower_client_never_makes_a_proof() -> None:
    """Whatever delay a busy client adds to its reads (the answer, the end), the proof only
    gets harder: the bound does not move, the answer comes later."""
    for delay in (0.0, 0.01, 0.05, 0.2, 1.0):
        proof = bound_proof([(0.010 + delay, 0.040 + delay)], 0.005 + delay, 0.100)
        assert (proof is not None) == (0.040 + delay < SHARE * 0.100)


def test_a_request_held_before_and_after_an_action_was_held_when_the_server_took_it() -> None:
    """ENGINE by the engines' own word: a read saw the request held, an action sent after that
    read's answer was answered, and a read sent after that answer still saw it held."""
    reads = [(0.010, 0.040, True), (0.060, 0.090, True)]
    proof = engine_proof([(0.001, 0.009), (0.045, 0.055)], reads, None)
    assert proof is not None and "45 ms" in proof and "60 ms" in proof


def test_a_stream_s_first_token_shows_it_held_before_its_action() -> None:
    assert engine_proof([(0.020, 0.030)], [(0.031, 0.050, True)], 0.015) is not None
    assert engine_proof([(0.020, 0.030)], [(0.031, 0.050, True)], 0.025) is None


def test_reads_that_cannot_order_the_action_and_the_request_prove_nothing() -> None:
    """An action that may have reached the server before the request did (no read saw it held
    before the action left, no first token), a read sent before the action was answered, or a
    read that did not see it held: no proof, whatever the client's pace."""
    after = [(0.060, 0.090, True)]
    assert engine_proof([(0.045, 0.055)], after, None) is None  # nothing held it before
    early = [(0.010, 0.040, True), (0.050, 0.090, True)]
    assert engine_proof([(0.045, 0.055)], early, None) is None  # read sent before the answer
    gone = [(0.010, 0.040, True), (0.060, 0.090, False)]
    assert engine_proof([(0.045, 0.055)], gone, None) is None
    assert engine_proof([], [(0.0, 0.01, True)], 0.0) is None
    for delay in (0.0, 0.05, 0.5):  # a slower client: later reads, the same (lack of) proof
        late = [(0.010 + delay, 0.040 + delay, True), (0.060 + 2 * delay, 0.090, False)]
        assert engine_proof([(0.045 + delay, 0.055 + delay)], late, None) is None


def test_the_fastest_completion_is_the_least_of_its_samples() -> None:
    fastest, calls = Fastest(), []

    def sample() -> float:
        calls.append(1)
        return [0.3, 0.1, 0.2][len(calls) - 1]

    assert fastest.of("shape", sample) == 0.1
    assert len(calls) == SAMPLES
    assert fastest.of("shape", sample) == 0.1 and len(calls) == SAMPLES, "sampled once"
    fastest.seen("other", 0.5)
    assert fastest.times() == {"shape": 0.1, "other": 0.5}


def test_a_shape_that_never_completes_has_no_bound() -> None:
    assert Fastest().of("shape", lambda: None) is None


def test_a_non_streamed_request_is_known_from_when_it_left_the_client() -> None:
    """Issue 28, seen under load: a worker thread sent its request late, the aborts it repeated
    before reached a server that had no such request yet, and the bound counted them from the
    line's start. Known is the body's write plus the first-token wait, or nothing."""
    from types import SimpleNamespace

    from conformance.inflight.attempts import known_whole
    from conformance.inflight.timeline import Timeline

    s = SimpleNamespace(limits=SimpleNamespace(ttft_s=0.005))
    line = Timeline(4092, "r")
    assert known_whole(s, line) is None  # type: ignore[arg-type]
    line.request_sent_s = 0.2
    assert known_whole(s, line) == pytest.approx(0.205)  # type: ignore[arg-type]
    # an abort answered at 100 ms proves nothing about a request written at 200 ms
    assert bound_proof([(0.057, 0.1)], known_whole(s, line), 0.6) is None  # type: ignore[arg-type]
    assert bound_proof([(0.21, 0.25)], known_whole(s, line), 0.6) is not None  # type: ignore[arg-type]


def test_a_stream_the_client_stopped_reading_is_too_close_to_judge() -> None:
    """Seen at load 9: WV-009 failed "stream did not end before its deadline" on a correct mock
    whose stream was still sending. An unread end is nothing to judge, never a FAIL; a stream
    past its tokens still fails."""
    from conformance.inflight.attempts import _read_till_deadline
    from conformance.inflight.timeline import Outcome, Timeline
    from conformance.wire.bounded import PastDeadline

    line = Timeline(8, "r")
    line.chunks.append((0.01, {"choices": [{"index": 0, "token_ids": [1, 2, 3]}]}))
    line.actions.append((0.02, 0.03))
    with _read_till_deadline(line):
        raise PastDeadline("stream did not end before its deadline; stopped")
    assert line.unread and line.outcome() is Outcome.TOO_CLOSE
    assert "deadline ran out" in line.describe()
    endless = Timeline(2, "r")
    endless.chunks.append((0.01, {"choices": [{"index": 0, "token_ids": [1, 2, 3]}]}))
    with pytest.raises(PastDeadline), _read_till_deadline(endless):
        raise PastDeadline("stream did not end before its deadline; stopped")


def test_the_fastest_completion_is_timed_to_the_answers_head_not_its_body() -> None:
    """Issue 28, seen with the slow-reader relay: the fastest completion, timed to the whole
    body, was the client's reading of 4,092 tokens (twice the generation), so an abort that
    came after a correct server's natural end was taken as proof and ABORT-003 failed. A
    server that answers its head at once and then dribbles its body for 0.6 s completed in
    well under that."""
    import json
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from conformance.inflight.plans import Plan
    from conformance.inflight.timeline import completed_in
    from conformance.wire import Client

    answer = json.dumps(
        {"choices": [{"index": 0, "token_ids": [7] * 64, "finish_reason": "length"}]}
    ).encode()

    class Dribble(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.flush()
            for at in range(0, len(answer), 32):
                self.wfile.write(answer[at : at + 32])
                self.wfile.flush()
                time.sleep(0.6 * 32 / len(answer))

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Dribble)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = Client(f"http://127.0.0.1:{server.server_address[1]}", timeout=10.0)
    try:
        body = {"token_ids": [1, 2], "sampling_params": {"max_tokens": 64}}
        started = time.monotonic()
        took = completed_in(client, body, Plan(64, 1, None))
        whole = time.monotonic() - started
    finally:
        client.close()
        server.shutdown()
        server.server_close()
    assert whole >= 0.5, "the body was not dribbled: the test proves nothing"
    assert took is not None and took < 0.25, (took, whole)


def test_a_body_the_client_could_not_read_in_time_is_too_close_to_judge() -> None:
    """Issue 28, behind the slow-reader relay: an ignored abort left a 4,092 x 2 token body
    that the client could not read within its deadline, and ABORT-003 failed on "response
    body did not end before its deadline", which a slow client alone can cause."""
    import time

    from conformance.inflight.attempts import _read_till_deadline
    from conformance.inflight.timeline import Outcome, Timeline
    from conformance.wire.bounded import PastDeadline, _Body

    late = _Body(deadline=time.monotonic() - 1, max_bytes=1 << 20)
    with pytest.raises(PastDeadline):
        late.add(b"{")
    line = Timeline(4092, "r", n=2, whole=True)
    line.actions.append((0.02, 0.03))
    with _read_till_deadline(line):
        late.add(b"{")
    assert line.unread and line.outcome() is Outcome.TOO_CLOSE
