"""Spec-driven fuzzing of a TITO server with schemathesis (`tito-conformance fuzz`).

`main(argv)` is the subcommand; `fuzz_report(...)` is what `tito-conformance run` calls with a
small budget and merges into its report.
"""

from __future__ import annotations

import threading

from conformance.fuzz.cli import main
from conformance.fuzz.merge import merge
from conformance.fuzz.settings import RUN_MAX_EXAMPLES, FuzzConfig, ServerFacts
from conformance.verdicts.results import Report
from conformance.wire import DEFAULT_TIMEOUT_S

__all__ = ["RUN_MAX_EXAMPLES", "FuzzConfig", "ServerFacts", "fuzz_report", "main", "merge"]


def fuzz_report(
    base_url: str,
    api_key: str | None = None,
    *,
    max_examples: int = RUN_MAX_EXAMPLES,
    seed: int = 0,
    vocab_size: int | None = None,
    oov_group: bool = False,
    operations: tuple[str, ...] = (),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    facts: ServerFacts | None = None,
    label_gate: threading.Event | None = None,
    ends: float | None = None,
) -> Report:
    """A fuzz run as a `conformance.verdicts.results.Report` (one per server), for the
    suite's `run`.

    The out-of-vocabulary group is off by default here: it may crash the server under test
    (vLLM 0.32 `--tokens-only`), which would end the rest of the suite's run. `facts`: what
    the suite's probe already learned (its features and limits); None probes anew.
    `label_gate`: run beside the suite's checks, it waits for this before changing the weight
    label (see `run.fuzz`). `ends`: the deadline of the run it is part of (`FuzzConfig.ends`).
    """
    from dataclasses import replace

    from conformance.fuzz.campaign import fuzz, probe_facts, to_report

    config = FuzzConfig(
        base_url=base_url,
        api_key=api_key,
        max_examples=max_examples,
        seed=seed,
        oov_group=oov_group,
        operations=operations,
        request_timeout_s=timeout_s,
        ends=ends,
    )
    config = replace(config, facts=facts or probe_facts(config, vocab_size))
    return to_report(fuzz(config, label_gate))
