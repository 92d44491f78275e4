"""Nothing lost: every request ends with an answer, an error or an abort before its deadline.

The API document says how a request ends (its `finish_reason`: stop, length or abort; or an
error answer), never in so many words that it must: LOAD-001 is the kit's own duty, derived
from that sentence, because a rollout worker waits on every request it sent. `tito-conformance
load` judges it over every request of a load run (`conformance.load.judge`), where a server
that loses requests only when crowded shows it; here it is judged at the suite's scale: a few
requests at once, streamed and not, each must end before its deadline, and a generate that
hung in the probe lost its request (GEN-001 says generate does not work; this says how).
"""

from __future__ import annotations

import threading

from conformance import api
from conformance.grounds import gate
from conformance.outcomes import Failure
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Requirement, Source
from conformance.session import Session
from conformance.wire import Client, ServerBroke
from conformance.wire.exchange import Exchange

REQUIREMENTS = [
    Requirement(
        "LOAD-001",
        MUST,
        Feature.CORE,
        "`finish_reason`\t`stop`, `length` or `abort`.",
        "every request ends with an answer, an error or an abort before its deadline",
        source=Source.DERIVED,
        evidence="the document names how a request ends, not that it must; a rollout worker "
        "waits on every request it sent, so one that never ends stalls it (issue 37: judged "
        "over every request of `tito-conformance load`)",
    ),
]
AT_ONCE = 3
"""Requests sent together: a stream, a body, a stream of n 2 (well under what a crowded
engine holds: the load run is where crowding is judged)."""
LOST = ("no response", "no complete answer")
"""How the client says a request got no answer before its deadline."""


def _lost(exchange: Exchange) -> bool:
    """No answer before the deadline: none at all, or a head whose body never ended."""
    return any(w in exchange.error for w in LOST)


def _send(s: Session, body: dict[str, object], found: list[Exchange]) -> None:
    client = Client(s.client.base_url, s.client.api_key, timeout=api.timeout_for(s, body))
    try:
        if body.get("stream"):
            with client.stream(api.GENERATE, body) as st:
                if st.status == 200:
                    for _ in st.events():
                        pass
                found.append(st.exchange)
        else:
            client.post(api.GENERATE, body)
            found.append(client.log[-1])
    except ServerBroke:
        found.append(client.log[-1])
    finally:
        client.close()


@checks("LOAD-001")
def test_requests_sent_together_all_end(tito: Session) -> None:
    if tito.features.generate == "broken":  # hung, or garbage: which, one request says
        found: list[Exchange] = []
        _send(tito, api.body(8), found)
        if found and _lost(found[0]):
            raise Failure(
                f"generate does not work: a minimal request got no answer before its deadline: "
                f"{found[0].received()[:300]}",
                reproducer=found[0].curl(),
            )
    gate.need_generate(tito, deciding=("LOAD-001",))
    bodies = [
        api.body(8, top={"stream": True}),
        api.body(8),
        api.body(8, top={"stream": True}, n=2, temperature=1.0, seed=7),
    ][:AT_ONCE]
    found = []
    threads = [threading.Thread(target=_send, args=(tito, b, found)) for b in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lost = [e for e in found if _lost(e)]
    if lost:
        raise Failure(
            f"{len(lost)} of {len(bodies)} requests sent together got no answer before their "
            f"deadline: {lost[0].sent()[:200]}: {lost[0].received()[:200]}",
            reproducer=lost[0].curl(),
        )
