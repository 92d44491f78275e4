"""One fuzz run end to end: learn the profile, fuzz every operation, sequences, the labelled
out-of-vocabulary group last (it may crash the server), and the report."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from schemathesis import GenerationMode

from conformance.fuzz.covers import sequence_covers
from conformance.fuzz.engine import Fuzzer
from conformance.fuzz.expectations import operations
from conformance.fuzz.findings import Finding, GroupStats, hash_seed_prefix
from conformance.fuzz.media import GROUP as MEDIA_GROUP
from conformance.fuzz.media import fuzz_media
from conformance.fuzz.oov import fuzz_oov
from conformance.fuzz.settings import FuzzConfig, ServerFacts
from conformance.fuzz.stateful import label_then_generate, run_sequences
from conformance.grounds import verdict
from conformance.grounds.verdict import STREAMED
from conformance.requirements import by_id
from conformance.server.features import Features
from conformance.server.limits import Limits
from conformance.verdicts.results import CheckResult, Report, ServerInfo, decide

SUITE_NAME = "tito-conformance fuzz"
LABELLING = ("updateWeightVersion", "finishWeightUpdate")
"""The operations that change the server's weight label."""


@dataclass
class FuzzResult:
    config: FuzzConfig
    facts: ServerFacts
    findings: list[Finding]
    stats: list[GroupStats]
    started_at: str
    duration_s: float
    server_gone: str = ""
    harness_error: str = ""
    unsendable: int = 0

    def cases_per_operation(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.stats:
            if s.group in ("positive", "negative"):
                out[s.operation] = out.get(s.operation, 0) + s.cases
        return out

    @property
    def total_cases(self) -> int:
        return sum(s.cases for s in self.stats)

    @property
    def failed(self) -> bool:
        return bool(self.findings)


def probe_facts(config: FuzzConfig, vocab_size: int | None = None) -> ServerFacts:
    """The profile of a server behind a base URL, from the suite's own probe (features and
    limits: `tito-conformance fuzz` alone learns them exactly as `run` does)."""
    from conformance.session import Session, SuiteConfig

    session = Session.open(
        SuiteConfig(config.base_url, config.api_key, timeout=config.request_timeout_s)
    )
    session.close()
    return facts_from(session.features, session.limits, vocab_size)


def facts_from(features: Features, limits: Limits, vocab_size: int | None = None) -> ServerFacts:
    """What the fuzzer judges by, from what the suite's probe learned of the server."""
    profile = {"enabled": "tokens-only" if features.tokens_only else "scale-out"}.get(
        features.generate, "disabled"
    )
    return ServerFacts(
        profile=profile,
        api_key_required=features.api_key_required,
        dev_mode=features.dev_mode,
        vocab_size=vocab_size,
        model=features.model,
        tokenizer=features.tokenizer,
        limits=limits,
    )


def fuzz(config: FuzzConfig, label_gate: threading.Event | None = None) -> FuzzResult:
    """Never raises for server faults: they are findings. `label_gate`: the fuzz runs beside
    checks that set and judge the weight label; what changes the label (its operations, the
    sequence that sets it) then comes last, once the gate is open. Each group draws the same
    cases in either order; only the label the others' answers carry may differ."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    facts = config.facts or probe_facts(config)
    fz = Fuzzer(config, facts)
    wanted = config.operations or tuple(operations())
    later = [op for op in wanted if op in LABELLING] if label_gate is not None else []
    modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if config.negative else [])
    examples = max(5, config.max_examples // 10)

    def fuzz_all(op_ids: list[str]) -> None:
        for op_id in op_ids:
            if fz.served(op_id) == "dev-semantics":  # the dev router's answer, not TITO's
                continue
            for mode in modes:
                if not fz.server_gone:
                    fz.fuzz_operation(op_id, mode)

    try:
        fuzz_all([op for op in wanted if op not in later])
        if config.negative and not fz.server_gone:
            fuzz_media(fz, wanted)  # never a label: a body the weight routes ignore is absent
        if label_gate is None:
            if config.stateful and not fz.server_gone:
                run_sequences(fz, examples)
        else:
            if config.stateful and not fz.server_gone:
                run_sequences(fz, examples, labels=False)
            label_gate.wait()
            fuzz_all(later)
            if config.stateful and not fz.server_gone and _sequence_applies(fz):
                label_then_generate(fz, examples)
        if (
            config.oov_group
            and not fz.server_gone
            and fz.served("generate") == "served"
            and "generate" in wanted
        ):
            fuzz_oov(fz)
    finally:
        fz.close()
    return FuzzResult(
        config,
        facts,
        list(fz.findings.values()),
        fz.stats,
        started_at,
        round(time.monotonic() - t0, 3),
        fz.server_gone,
        unsendable=fz.unsendable,
    )


def _sequence_applies(fz: Fuzzer, op_id: str = "updateWeightVersion") -> bool:
    return fz.served("generate") == "served" and fz.served(op_id) == "served"


def to_report(result: FuzzResult) -> Report:
    """The suite's results model: each finding is a failed check under its requirement(s)."""
    catalogue = by_id()
    checks: dict[str, list[CheckResult]] = {}
    for f in result.findings:
        check = verdict.found(
            f"fuzz[{f.group}] {f.label}{STREAMED if f.stream else ' '}{f.check}"
            + (f" (HTTP {f.status})" if f.status is not None else ""),
            f"{f.message} ({f.occurrences} case(s))",
            f.reproducer,
            streamed=f.stream,
            answered=f.status,
        )
        for rid in f.requirement_ids:
            checks.setdefault(rid, []).append(check)
    fuzzed = sorted({rid for rid in checks} | _covered(result))
    results = []
    for rid in fuzzed:
        found = checks.get(rid) or [verdict.unfound(rid)]
        results.append(decide(catalogue[rid], found))
    return Report(
        suite_name=SUITE_NAME,
        suite_version=_version(),
        spec_version=_spec_version(),
        server=ServerInfo(
            result.config.target, None, [result.facts.profile], [], profile=result.facts.profile
        ),
        started_at=result.started_at,
        duration_s=result.duration_s,
        requirements=results,
        harness_error=result.harness_error,
    )


def _covered(result: FuzzResult) -> set[str]:
    """Requirements the run exercised without a failure (so they show as passed)."""
    ran = {s.operation for s in result.stats if s.cases}
    covered = {"ERR-002", "ERR-003"} if ran else set()
    if "generate" in ran and result.facts.profile != "disabled":
        covered |= {"GEN-001", "GEN-REQ-012", "GEN-RESP-004", "STREAM-001", "STREAM-002"}
        covered |= {"SCHEMA-GEN-001", "SCHEMA-STREAM-001"}
    if any(s.group == "out-of-vocabulary" and s.cases for s in result.stats):
        covered.add("ERR-007")
    if any(s.group == MEDIA_GROUP and s.cases for s in result.stats):
        covered.add("ERR-006")
    if result.facts.profile == "disabled" and ran:
        covered |= {"DISABLED-001", "DISABLED-003"}
    for sequence, ids in sequence_covers().items():  # its failures file under these too
        if sequence in ran:
            covered |= ids
    return {rid for rid in covered if rid in by_id()}


def _version() -> str:
    from conformance import __version__

    return __version__


def _spec_version() -> str:
    from conformance.document import SPEC_VERSION

    return SPEC_VERSION


def summary_text(result: FuzzResult) -> str:
    lines = [
        f"fuzz {result.config.target} (profile {result.facts.profile}, seed "
        f"{result.config.seed}, {hash_seed_prefix().strip()}): {result.total_cases} cases in "
        f"{result.duration_s:.1f} s"
    ]
    for s in result.stats:
        note = f" (skipped: {s.skipped})" if s.skipped else ""
        note += f" ({s.lax} lax-coercible: may be accepted)" if s.lax else ""
        lines.append(
            f"  {s.operation:<26} {s.group:<18} {s.cases:>5} cases "
            f"{s.duration_s:>7.2f} s {dict(sorted(s.statuses.items()))}{note}"
        )
    if result.server_gone:
        lines.append(f"  server gone: {result.server_gone}")
    if result.unsendable:
        lines.append(f"  {result.unsendable} case(s) no HTTP/1.1 client can send: not judged")
    lines.append(f"{len(result.findings)} distinct failure(s)")
    for f in result.findings:
        lines.append(
            f"- [{f.group}] {f.label} {f.check} -> {', '.join(f.requirement_ids)} "
            f"x{f.occurrences}\n    {f.message.splitlines()[0][:300]}\n    "
            f"{f.reproducer.replace(chr(10), chr(10) + '    ')[:1200]}"
        )
    return "\n".join(lines)
