"""`/mock/stats` `held` and `hung_up`: what the engine still generates, not what its streams
still write (issue 28: the kit's ENGINE evidence rests on them). A stream whose tokens are all
made but whose last events wait on a slow client is no longer held: seen as a false FAIL of
ABORT-002 on a correct mock (the fuzzer's abort, `--max-model-len 48`, a busy machine)."""

from __future__ import annotations

import asyncio
import time

from mock_server.behaviour.config import parse_args
from mock_server.engine.core import Engine, Job
from mock_server.parsing.request import parse_generate


def _job(engine: Engine, rid: str, n: int = 2, max_tokens: int = 3) -> Job:
    sampling = {"max_tokens": max_tokens, "n": n, "temperature": 1.0, "seed": 1, "ignore_eos": True}
    req = parse_generate({"token_ids": [1, 2, 3], "sampling_params": sampling}, engine.cfg)
    return Job(request_id=rid, req=req, max_tokens=max_tokens)


def test_a_stream_is_held_while_tokens_are_to_come_and_not_after() -> None:
    async def scenario() -> None:
        engine = Engine(parse_args(["--enable-scale-out", "--mock-vocab-size", "512"]))
        job = _job(engine, "generate-tokens-a")
        events = engine.run(job)
        first = await anext(events)  # one step made: tokens still to come
        assert engine.stats()["held"] == ["generate-tokens-a"], first
        engine.client_gone("generate-tokens-a")
        assert engine.stats()["hung_up"] == ["generate-tokens-a"]
        seen = 1
        while not all(seq.finish_reason for seq in job.sequences):
            await anext(events)
            seen += 1
        # every token made, the last events not yet taken by the writer: still registered,
        # no longer held, so no longer named as hung up either (what ended is forgotten)
        assert engine.stats()["held"] == [] and engine.stats()["in_flight"] == 1
        assert engine.stats()["hung_up"] == []
        engine.client_gone("generate-tokens-a")
        assert engine.stats()["hung_up"] == []
        await events.aclose()
        assert engine.stats()["in_flight"] == 0

    asyncio.run(scenario())


def test_an_abort_during_a_steps_events_cuts_every_sequence_the_step_left_running() -> None:
    """A step makes every sequence's token before its events go out: an abort that comes in
    between two of them finds each sequence ended by that step or still to be cut."""

    async def scenario() -> None:
        engine = Engine(parse_args(["--enable-scale-out", "--mock-vocab-size", "512"]))
        job = _job(engine, "generate-tokens-b", n=2, max_tokens=5)
        events = engine.run(job)
        await anext(events)  # sequence 0's event of step 1; sequence 1 stepped already
        assert [len(seq.records) for seq in job.sequences] == [1, 1]
        engine.abort(["generate-tokens-b"])
        async for _ in events:
            pass
        assert [seq.finish_reason for seq in job.sequences] == ["abort", "abort"]

    asyncio.run(scenario())


def test_hang_ups_leave_no_ended_request_behind() -> None:
    """Point 7 of issue 37: `/mock/stats` keeps nothing per request past its end. 250 streams
    hung up on through the HTTP layer (a real server): `hung_up` names none of them once they
    ended, and never more than were held at once."""
    from mock_server.harness.tito_mock import MockSettings, TitoMock

    with TitoMock(MockSettings.of(flags=["--enable-scale-out"], itl_ms=2)) as mock:
        import httpx

        seen = 0
        with httpx.Client(base_url=mock.base_url, timeout=10) as client:
            for i in range(250):
                body = {
                    "token_ids": [1, 2, 3],
                    "sampling_params": {"max_tokens": 200, "ignore_eos": True},
                    "stream": True,
                }
                with client.stream(
                    "POST", "/inference/v1/generate", json=body, headers={"X-Request-Id": f"h{i}"}
                ) as reply:
                    for line in reply.iter_lines():
                        if line.startswith("data: {"):
                            break  # one chunk in: hang up
                if i % 50 == 49:
                    seen = max(seen, len(mock.stats()["hung_up"]))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and mock.stats()["held"]:
            time.sleep(0.05)
        stats = mock.stats()
    assert stats["held"] == [] and stats["hung_up"] == [], stats
    assert stats["finished"]["abort"] >= 250 and seen <= 2, (stats["finished"], seen)
