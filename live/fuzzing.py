"""The fuzzer against one launched server: replay the listed reproducers, fuzz, judge.

The fuzz judges by what the suite's probe learned of the server (`Report.learned`): a run
probes once. Reproducers go first and the fuzzer's out-of-vocabulary group goes last, because
that group makes a vLLM 0.32 `--tokens-only` server exit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.verdicts.results import Report
from conformance.wire import DEFAULT_TIMEOUT_S

from .deviations import Deviation
from .profiles import LiveProfile

if TYPE_CHECKING:
    from . import fuzz_gate
    from .launcher import LiveServer

LIVE_MAX_EXAMPLES = 20
"""Cases per operation and mode against a real CPU server: every operation, in about 20 s."""
LIVE_SEED = 1234


@dataclass(frozen=True)
class FuzzBudget:
    max_examples: int = LIVE_MAX_EXAMPLES
    seed: int = LIVE_SEED
    timeout_s: float = DEFAULT_TIMEOUT_S
    answer_budget_s: float = 0.0  # 0: from the timeout (`conformance.wire.Timeouts.answer`)


def vocab_size(model: str) -> int | None:
    """The model's vocabulary from its local config.json (None: a hub name, unknown here)."""
    config = Path(model) / "config.json"
    try:
        size = json.loads(config.read_text(encoding="utf-8")).get("vocab_size")
    except (OSError, ValueError):
        return None
    return size if isinstance(size, int) and size > 0 else None


def fuzz_server(
    server: LiveServer,
    profile: LiveProfile,
    listed: list[Deviation],
    report: Report,
    out: Path,
    budget: FuzzBudget,
    vocab: int | None,
) -> fuzz_gate.FuzzVerdict:
    """Fuzz the server `report`'s suite run probed, with what it learned (a run whose probe
    failed learned nothing: the fuzz then probes). Never raises: a harness fault is the
    verdict's harness error."""
    # Deferred: schemathesis is a slow import, and `--print-argv` needs none of it.
    from conformance.fuzz import FuzzConfig
    from conformance.fuzz.campaign import facts_from, fuzz, probe_facts, summary_text, to_report
    from conformance.reporting import json_report

    from . import fuzz_gate

    replays = {
        fuzz_gate.label(d): fuzz_gate.replay(
            server.base_url, profile.api_key, d.fuzz.reproducer, budget.timeout_s
        )
        for d in fuzz_gate.fuzz_entries(listed, profile.name)
        if d.fuzz is not None and d.fuzz.reproducer is not None
    }
    config = FuzzConfig(
        base_url=server.base_url,
        api_key=profile.api_key,
        max_examples=budget.max_examples,
        seed=budget.seed,
        oov_group=True,
        request_timeout_s=budget.timeout_s,
        answer_budget_s=budget.answer_budget_s,
        # One case at a time, as the known deviations were recorded: a real vLLM on two CPU
        # cores answers slower side by side, and the answer budget would judge that.
        senders=1,
    )
    version = report.server.version
    try:
        if report.learned is None:
            facts = probe_facts(config, vocab)
        else:
            features, limits = report.learned
            facts = facts_from(features, limits, vocab)
        result = fuzz(replace(config, facts=facts))
    except Exception as exc:  # the fuzzer's own fault; server faults are findings
        verdict = fuzz_gate.FuzzVerdict(profile.name, version)
        verdict.harness_error = f"{type(exc).__name__}: {exc}"
        return verdict
    lines = [summary_text(result), "", "replayed reproducers of listed deviations:"]
    lines += [f"  {name}: deviant={r.deviant} -> {r.observed}" for name, r in replays.items()]
    (out / f"fuzz-{profile.name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    json_report.write([to_report(result)], out / f"fuzz-{profile.name}.json")
    return fuzz_gate.judge(result, listed, replays, version, profile.name)
