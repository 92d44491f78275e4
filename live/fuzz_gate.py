"""The fuzzer's half of the known-deviations gate: findings against listed `fuzz:` entries.

A fuzz finding passes the gate only if a listed entry covers it (same requirement, operation,
group and check, for this profile). A listed entry is stale when its evidence is gone: its
reproducer, replayed against the live server, no longer answers the deviant way (or, without
a reproducer, the fuzzer exercised its operation and group and did not find it). Replaying
the reproducer decides staleness independently of how the fuzzer draws its cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.fuzz.campaign import FuzzResult
from conformance.fuzz.findings import Finding
from conformance.wire import DEFAULT_TIMEOUT_S, Client, ServerBroke

from .deviations import Deviation, Reproducer, verdict_lines


@dataclass
class Replay:
    deviant: bool
    observed: str


@dataclass
class FuzzVerdict:
    profile: str | None
    version: str | None
    cases: int = 0
    expected: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    not_exercised: list[str] = field(default_factory=list)
    harness_error: str = ""

    @property
    def ok(self) -> bool:
        return not (self.unexpected or self.stale or self.harness_error)


def label(entry: Deviation) -> str:
    match = entry.fuzz
    assert match is not None
    parts = [
        "/".join(match.operations) or "any operation",
        "/".join(match.groups) or "any group",
        "/".join(match.checks) or "any check",
    ]
    return f"{entry.id} [{', '.join(parts)}]"


def fuzz_entries(listed: list[Deviation], profile: str | None) -> list[Deviation]:
    return [d for d in listed if d.fuzz is not None and d.applies(profile)]


def replay(
    base_url: str,
    api_key: str | None,
    reproducer: Reproducer,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Replay:
    """Send the reproducer once (the key first, its own headers over it); whether the answer
    still shows the deviation."""
    client = Client(base_url, api_key, timeout_s, stop_after=None, keep_log=False)
    try:
        response = client.request(
            reproducer.method,
            reproducer.path,
            content=reproducer.body,
            headers=dict(reproducer.headers),
        )
    except ServerBroke as exc:
        return Replay(False, f"no answer: {exc}")
    finally:
        client.close()
    observed = f"{response.status} {response.body[:300]!r}"
    if reproducer.answers_status is not None and response.status != reproducer.answers_status:
        return Replay(False, observed)
    if reproducer.answers_keys:
        try:
            body = response.json()
        except ServerBroke:
            return Replay(False, observed)
        if not isinstance(body, dict) or not all(k in body for k in reproducer.answers_keys):
            return Replay(False, observed)
    return Replay(True, observed)


def _covering(finding: Finding, entries: list[Deviation]) -> list[Deviation]:
    return [
        d
        for d in entries
        if d.fuzz is not None
        and d.id in finding.requirement_ids
        and d.fuzz.covers(finding.operation, finding.group, finding.check)
    ]


def _exercised(entry: Deviation, result: FuzzResult) -> bool:
    match = entry.fuzz
    assert match is not None
    return any(
        s.cases
        and (not match.operations or s.operation in match.operations)
        and (not match.groups or s.group in match.groups)
        for s in result.stats
    )


def judge(
    result: FuzzResult,
    listed: list[Deviation],
    replays: dict[str, Replay],
    version: str | None,
    profile: str | None,
) -> FuzzVerdict:
    """`profile` is the live profile's name (`api-key`), which entries are scoped by."""
    entries = fuzz_entries(listed, profile)
    verdict = FuzzVerdict(profile, version, result.total_cases, harness_error=result.harness_error)
    matched: set[str] = set()
    for finding in result.findings:
        covering = _covering(finding, entries)
        matched |= {label(d) for d in covering}
        if not covering:
            first = finding.message.splitlines()[0][:300] if finding.message else ""
            verdict.unexpected.append(
                f"{'/'.join(finding.requirement_ids)} [{finding.operation}, {finding.group}, "
                f"{finding.check}] x{finding.occurrences}: {first}\n      {finding.curl[:600]}"
            )
    for entry in entries:
        name = label(entry)
        rep = replays.get(name)
        if rep is not None:
            target = verdict.expected if rep.deviant else verdict.stale
            target.append(name if rep.deviant else f"{name}: replay answered {rep.observed}")
        elif name in matched:
            verdict.expected.append(name)
        elif entry.intermittent:
            verdict.not_exercised.append(f"{name} (a race: not seen this time)")
        elif _exercised(entry, result):
            verdict.stale.append(f"{name}: the fuzzer exercised it and found nothing")
        else:
            verdict.not_exercised.append(name)
    return verdict


def render(verdicts: list[FuzzVerdict]) -> str:
    lines = ["known-deviations gate (fuzzing):"]
    for v in verdicts:
        state = "ok" if v.ok else "FAILED"
        sections = [
            ("listed deviation, still found: ", v.expected),
            ("UNLISTED FINDING ", v.unexpected),
            ("STALE (listed but gone, remove it): ", v.stale),
            ("listed but not exercised here: ", v.not_exercised),
        ]
        heading = f"[{v.profile}] vLLM {v.version}: {state} ({v.cases} cases)"
        lines += verdict_lines(heading, sections, v.harness_error)
    return "\n".join(lines)
