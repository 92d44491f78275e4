"""The labelled out-of-vocabulary group: positive generate cases with one id at or above the
vocabulary. Run last: it crashes a real vLLM 0.32 `--tokens-only` server, and the fuzzer must
report that as a finding (`server_survives`), not stop."""

from __future__ import annotations

import time
from typing import Any

from schemathesis import GenerationMode

from conformance.fuzz.engine import Fuzzer, ServerGone, builtin_checks, wants_stream
from conformance.fuzz.oracles import OUR_CHECKS, stream_payloads
from loopback.timeouts import HEALTH_POLL_S, STAYS_HEALTHY_S

GROUP = "out-of-vocabulary"


def fuzz_oov(fz: Fuzzer) -> None:
    """Prompts with one id at or above the vocabulary: a 400, never a 5xx or a crash."""
    op_id = "generate"
    op = fz.schema["/inference/v1/generate"]["POST"]
    oov = fz.facts.oov_id

    def poison(case: Any) -> Any:
        case = fz.prepare(op_id, case, positive=True)
        ids = case.body["token_ids"]
        ids[len(str(ids)) % len(ids)] = oov + len(ids) % 7
        return case

    strategy = op.as_strategy(generation_mode=GenerationMode.POSITIVE).map(poison)

    examples = min(fz.config.max_examples, 30)
    fz.run_group(op_id, GROUP, strategy, examples, lambda case, i: send_oov_case(fz, case, i))


def send_oov_case(fz: Fuzzer, case: Any, index: int) -> None:
    """Send one poisoned prompt and judge it; a server that went down with it is recorded as
    `server_survives` (never as a slow answer) and ends the group."""
    try:
        response = fz.call(case)
    except ServerGone:
        raise
    except Exception as exc:
        if fz.alive():
            fz.transport_error("generate", GROUP, case, exc, index)
            raise ServerGone("the server stopped answering an out-of-vocabulary prompt") from exc
        _crashed(
            fz,
            case,
            None,
            index,
            f"sending this prompt failed ({type(exc).__name__}: {exc}) and /health no longer "
            "answers: the server exited after this out-of-vocabulary prompt or the one before",
        )
        raise ServerGone("the server exited after an out-of-vocabulary prompt") from exc
    fz.judge(
        "generate",
        GROUP,
        case,
        response,
        index,
        checks=[*builtin_checks()[:4], *OUR_CHECKS, oov_rejected],
    )
    if response.status_code >= 500 and not _survives(fz):
        _crashed(
            fz,
            case,
            response.status_code,
            index,
            f"after this prompt answered {response.status_code}, "
            "the server stopped answering /health (it exited)",
        )
        raise ServerGone("the server exited after an out-of-vocabulary prompt")


def _crashed(fz: Fuzzer, case: Any, status: int | None, index: int, what: str) -> None:
    fz.record(
        "generate",
        case.operation.label,
        GROUP,
        "server_survives",
        status,
        f"out-of-vocabulary prompt (ids {case.body['token_ids']}): {what}",
        case.as_curl_command(headers=fz.headers, base_url=fz._base()),
        index,
    )


def _survives(fz: Fuzzer) -> bool:
    """A server that answered 5xx is alive if it keeps answering /health (`STAYS_HEALTHY_S`)."""
    deadline = time.monotonic() + STAYS_HEALTHY_S
    while True:
        if not fz.alive():
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(HEALTH_POLL_S)


def oov_rejected(ctx: Any, response: Any, case: Any) -> None:
    """ERR-007: "an out-of-vocabulary token id is a 400" (streamed: 200 and one error event,
    the way every engine-side rejection of a stream arrives)."""
    if response.status_code == 200 and wants_stream(case):
        chunks = stream_payloads(response)
        if any(isinstance(c, dict) and "error" in c for c in chunks):
            return
        raise AssertionError("a streamed prompt with an out-of-vocabulary id got no error event")
    if response.status_code != 400:
        raise AssertionError(
            f"a prompt with an out-of-vocabulary id answered {response.status_code}, not 400"
        )
