"""The known-deviations gate: real-server failures are listed, never hidden in the tests.

The live run passes when the set of failing requirements equals the listed set for the server's
version and profile: an unlisted failure is a regression (or a new vLLM bug to list), a listed
deviation that passes is stale and must be removed. Entries with a `fuzz:` part describe what
the fuzzer finds instead (`fuzz_gate` judges them); the suite's gate ignores them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.verdicts.results import Report, Status

DEFAULT_FILE = Path(__file__).with_name("known_deviations.yaml")
KINDS = ("vllm-bug", "document-disagreement", "predates", "router-bug")
"""`predates`: the release is older than this part of the document (no such field, route);
`router-bug`: a router in front of correct engines breaks it (the `routers:` part)."""
ROUTER_KEY = "router:"


@dataclass(frozen=True)
class Reproducer:
    """One request that shows the deviation, and the answer that means it is still there."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    answers_status: int | None = None
    answers_keys: tuple[str, ...] = ()  # top-level JSON keys the deviant answer has


@dataclass(frozen=True)
class FuzzMatch:
    """Which fuzz findings an entry covers: (operation, group, check), each empty for any."""

    operations: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    reproducer: Reproducer | None = None

    def covers(self, operation: str, group: str, check: str) -> bool:
        return (
            (not self.operations or operation in self.operations)
            and (not self.groups or group in self.groups)
            and (not self.checks or check in self.checks)
        )


@dataclass(frozen=True)
class Deviation:
    id: str
    kind: str
    symptom: str
    evidence: str
    profiles: tuple[str, ...] = ()
    fuzz: FuzzMatch | None = None
    intermittent: bool = False
    """A race: the entry may pass in a run without going stale (never hides other failures)."""
    curl: str = ""
    """The request that shows it, as an upstream bug report needs it (router entries)."""

    def applies(self, profile: str | None) -> bool:
        return not self.profiles or profile in self.profiles


@dataclass
class Verdict:
    profile: str | None
    version: str | None
    unexpected: dict[str, str] = field(default_factory=dict)  # id -> reason
    stale: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    not_exercised: list[str] = field(default_factory=list)
    intermittent: list[str] = field(default_factory=list)  # listed races that passed this time
    harness_error: str = ""

    @property
    def ok(self) -> bool:
        return not (self.unexpected or self.stale or self.harness_error)


def load(path: Path = DEFAULT_FILE) -> dict[str, list[Deviation]]:
    """vLLM's entries by version, and (`routers:`, keyed `"vllm-router 0.1.17"`) a router's
    under `router:` + that key (see `for_router`)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = _section(data.get("versions") or {}, path, "")
    for key, items in _section(data.get("routers") or {}, path, ROUTER_KEY).items():
        out.setdefault(key, []).extend(items)
    return out


def _section(versions: dict[str, Any], path: Path, prefix: str) -> dict[str, list[Deviation]]:
    out: dict[str, list[Deviation]] = {}
    for version, entries in versions.items():
        items = []
        for entry in entries or []:
            kind = entry.get("kind", "")
            if kind not in KINDS:
                raise ValueError(
                    f"{path}: {version} {entry.get('id')}: kind must be one of {KINDS}"
                )
            items.append(
                Deviation(
                    str(entry["id"]),
                    kind,
                    str(entry.get("symptom", "")).strip(),
                    str(entry.get("evidence", "")).strip(),
                    tuple(entry.get("profiles") or ()),
                    _fuzz_match(entry.get("fuzz"), f"{path}: {version} {entry.get('id')}"),
                    bool(entry.get("intermittent", False)),
                    " ".join(str(entry.get("curl", "")).split()),
                )
            )
        # `"0.30.0, 0.31.0":` lists entries two releases share (they behave alike)
        for each in str(version).split(","):
            out.setdefault(prefix + each.strip(), []).extend(items)
    return out


def _fuzz_match(raw: object, where: str) -> FuzzMatch | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: fuzz must be a mapping")
    rep = raw.get("reproducer")
    reproducer = None
    if rep is not None:
        body = rep.get("body")
        if "body_hex" in rep:
            data: bytes | None = bytes.fromhex(str(rep["body_hex"]))
        elif body is None:
            data = None
        else:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        answers = rep.get("answers") or {}
        if not answers:
            raise ValueError(f"{where}: a reproducer needs `answers` (the deviant answer)")
        reproducer = Reproducer(
            str(rep.get("method", "POST")),
            str(rep["path"]),
            tuple((str(k), str(v)) for k, v in (rep.get("headers") or {}).items()),
            data,
            answers.get("status"),
            tuple(answers.get("keys") or ()),
        )
    return FuzzMatch(
        tuple(raw.get("operations") or ()),
        tuple(raw.get("groups") or ()),
        tuple(raw.get("checks") or ()),
        reproducer,
    )


def for_version(table: dict[str, list[Deviation]], version: str | None) -> list[Deviation]:
    """Entries of `version`; a local build suffix (`0.32.0+cpu`) is ignored."""
    if version is None:
        return []
    bare = version.split("+", 1)[0]
    return table.get(version) or table.get(bare) or []


def for_router(table: dict[str, list[Deviation]], router: str) -> list[Deviation]:
    """Entries of a router release, e.g. `"vllm-router 0.1.17"`."""
    return table.get(ROUTER_KEY + router) or []


def judge(report: Report, listed: list[Deviation]) -> Verdict:
    profile = report.server.profile
    verdict = Verdict(profile, report.server.version, harness_error=report.harness_error)
    applying = [d for d in listed if d.applies(profile) and d.fuzz is None]
    wanted = {d.id for d in applying}
    races = {d.id for d in applying if d.intermittent}
    for result in report.requirements:
        rid = result.requirement.id
        failed = result.status in (Status.FAIL, Status.ERROR)
        if failed and rid not in wanted:
            verdict.unexpected[rid] = f"{result.status.value}: {result.reason}"[:600]
        elif failed:
            verdict.expected.append(rid)
        elif rid in races:
            verdict.intermittent.append(rid)
        elif rid in wanted and result.status is Status.PASS:
            verdict.stale.append(rid)
        elif rid in wanted:
            verdict.not_exercised.append(rid)
    return verdict


def verdict_lines(
    heading: str, sections: list[tuple[str, list[str]]], harness_error: str
) -> list[str]:
    """One profile's block of a gate: its heading, each item under its label, a harness error."""
    lines = [f"  {heading}"]
    for label, items in sections:
        lines += [f"    {label}{item}" for item in items]
    if harness_error:
        lines.append(f"    HARNESS ERROR: {harness_error[:800]}")
    return lines


def render(verdicts: list[Verdict]) -> str:
    lines = ["known-deviations gate:"]
    for v in verdicts:
        state = "ok" if v.ok else "FAILED"
        unexpected = [f"{rid}: {why}" for rid, why in v.unexpected.items()]
        sections = [
            ("listed deviation, still failing: ", v.expected),
            ("UNLISTED FAILURE ", unexpected),
            ("STALE (listed but passes, remove it): ", v.stale),
            ("listed but not exercised here: ", v.not_exercised),
            ("listed race, did not show this time: ", v.intermittent),
        ]
        heading = f"[{v.profile}] vLLM {v.version}: {state}"
        lines += verdict_lines(heading, sections, v.harness_error)
    return "\n".join(lines)
