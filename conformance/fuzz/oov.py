"""The labelled out-of-vocabulary group: positive generate cases with one id at or above the
vocabulary. Run last: it crashes a real vLLM 0.32 `--tokens-only` server, and the fuzzer must
report that as a finding (`server_survives`), not stop."""

from __future__ import annotations

from typing import Any

from schemathesis import GenerationMode

from .checks import OUR_CHECKS, stream_payloads
from .engine import Fuzzer, ServerGone, builtin_checks, wants_stream


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

    def on_case(case: Any, index: int) -> None:
        try:
            response = fz.call(case)
        except Exception as exc:
            fz.transport_error(op_id, "out-of-vocabulary", case, exc, index)
            raise ServerGone(
                "the server stopped answering after an out-of-vocabulary prompt"
            ) from exc
        fz.judge(
            op_id,
            "out-of-vocabulary",
            case,
            response,
            index,
            checks=[*builtin_checks()[:4], *OUR_CHECKS, oov_rejected],
        )
        if response.status_code >= 500 and not fz.alive():
            curl = case.as_curl_command(headers=fz.headers, base_url=fz._base())
            fz.record(
                op_id,
                case.operation.label,
                "out-of-vocabulary",
                "server_survives",
                response.status_code,
                f"after this out-of-vocabulary prompt "
                f"(id {case.body['token_ids']}) answered {response.status_code}, "
                "the server stopped answering /health (it exited)",
                curl,
                index,
            )
            raise ServerGone("the server exited after an out-of-vocabulary prompt")

    fz.run_group(op_id, "out-of-vocabulary", strategy, min(fz.config.max_examples, 30), on_case)


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
