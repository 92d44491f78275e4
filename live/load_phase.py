"""The load phase of a live profile (`--load S`, issue 37): after the suite (and the diff;
before the fuzz, whose out-of-vocabulary group may kill a tokens-only server), `tito-conformance
load` for S seconds against the same server, its reports beside the profile's others, its
violations gated on the known deviations as the suite's failures.

The gate, per requirement ID: a violated MUST passes only when the server's version lists it
for this profile (`known_deviations.yaml`'s suite entries: a deviation the suite shows is the
same deviation under load). Any other violation fails the profile, a lost request (LOAD-001)
included, and so does a load that could not judge (no report, a harness error, nothing
judged). A listed entry the load did not violate is not stale here: a short load need not
draw the request that shows it, and staleness is the suite's gate's to decide. A profile whose
server serves no generate (`disabled`) has nothing to load and is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.verdicts.results import Report

from .deviations import Deviation, for_version, verdict_lines

LOAD_CONCURRENCY = 8
"""Users at once: above a CPU engine's batch of long requests, so requests queue."""
GENERATING = ("scale-out", "tokens-only")
"""Features of a suite report that say the server serves generate."""


@dataclass
class LoadVerdict:
    profile: str | None
    version: str | None = None
    expected: list[str] = field(default_factory=list)
    unexpected: dict[str, str] = field(default_factory=dict)  # id -> its first violation
    figures: str = ""
    skipped: str = ""
    harness_error: str = ""

    @property
    def ok(self) -> bool:
        return not (self.unexpected or self.harness_error)


def judge(data: dict[str, Any], listed: list[Deviation], profile: str | None) -> LoadVerdict:
    """One load report against the deviations listed for its server's version."""
    server = data.get("server") or {}
    verdict = LoadVerdict(profile, server.get("version"))
    covered = {d.id for d in listed if d.applies(profile) and d.fuzz is None}
    for row in data.get("requirements") or []:
        if row.get("status") != "fail":
            continue
        if row["id"] in covered:
            verdict.expected.append(row["id"])
            continue
        first = row.get("first_violation") or {}
        verdict.unexpected[row["id"]] = (
            f"{row['violations']} of {row['judged']} violate it; first at {first.get('at_s')} s "
            f"({first.get('in_flight')} in flight): {first.get('message')}"
        )[:600]
    f = data.get("figures") or {}
    verdict.figures = (
        f"{f.get('requests')} requests ({f.get('requests_per_s')}/s), {f.get('tokens')} tokens, "
        f"{f.get('aborts')} aborts, {f.get('errors')} errors, {f.get('lost')} lost"
    )
    errors = list(data.get("harness_errors") or [])
    if not f.get("requests"):
        errors.append("no request of the load ended: nothing was judged")
    verdict.harness_error = "; ".join(errors)[:800]
    return verdict


@dataclass
class Loading:
    """The load step of every profile: seconds, users, deviations table, artifacts, verdicts."""

    seconds: float
    table: dict[str, list[Deviation]]
    out: Path
    timeout: float
    concurrency: int = LOAD_CONCURRENCY
    verdicts: list[LoadVerdict] = field(default_factory=list)

    def run(
        self,
        base_url: str,
        api_key: str | None,
        report: Report,
        engines: tuple[str, ...] = (),
        extra: list[Deviation] | None = None,
    ) -> LoadVerdict:
        """Load `base_url`, whose suite run gave `report`; `extra`: entries beside the version's
        (a router's)."""
        profile = report.server.profile
        detected = set(report.server.detected_features)
        if detected and not detected & set(GENERATING):  # (none: the suite's probe failed)
            verdict = LoadVerdict(profile, report.server.version, skipped="serves no generate")
            self.verdicts.append(verdict)
            return verdict
        stem = self.out / f"load-{profile}"
        argv = [sys.executable, "-m", "conformance.load", "--base-url", base_url]
        argv += ["--duration", f"{self.seconds:g}", "--concurrency", str(self.concurrency)]
        argv += ["--timeout", f"{self.timeout:g}", "--json-report", f"{stem}.json"]
        argv += ["--html", f"{stem}.html", "--junit-xml", f"{stem}.xml"]
        for url in engines:
            argv += ["--engine", url]
        env = dict(os.environ)
        env.pop("TITO_API_KEY", None)
        if api_key:
            env["TITO_API_KEY"] = api_key  # not in argv, where ps shows it
        limit = self.seconds + 4 * self.timeout + 120  # its drain, its start, its reports
        with Path(f"{stem}.log").open("w", encoding="utf-8") as log:
            try:
                code = subprocess.run(
                    argv, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=limit
                ).returncode
            except subprocess.TimeoutExpired:
                code = -1
        path = Path(f"{stem}.json")
        if not path.exists():
            tail = Path(f"{stem}.log").read_text(encoding="utf-8", errors="replace")[-1500:]
            why = "did not end in time" if code == -1 else f"exited {code} with no report"
            verdict = LoadVerdict(profile, report.server.version, harness_error=f"{why}: {tail}")
        else:
            data = json.loads(path.read_text(encoding="utf-8"))
            listed = for_version(self.table, data["server"].get("version")) + (extra or [])
            verdict = judge(data, listed, profile)
        self.verdicts.append(verdict)
        return verdict


def render(verdicts: list[LoadVerdict]) -> str:
    lines = ["load gate:"]
    for v in verdicts:
        state = "skipped" if v.skipped else "ok" if v.ok else "FAILED"
        unexpected = [f"{rid}: {why}" for rid, why in v.unexpected.items()]
        sections = [
            ("", [f"{v.figures}"] if v.figures else [f"not run: {v.skipped}"] if v.skipped else []),
            ("listed deviation, violated under load: ", v.expected),
            ("UNLISTED VIOLATION ", unexpected),
        ]
        heading = f"[{v.profile}] vLLM {v.version}: {state}"
        lines += verdict_lines(heading, sections, v.harness_error)
    return "\n".join(lines)
