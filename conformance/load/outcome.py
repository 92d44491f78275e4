"""What a load run comes to: the JSON report (the source of truth, validated against
`load-report.schema.json` shipped beside this module), and the same verdicts as the suite's
results model (`verdicts.results.Report`), so JUnit and the exit code are `run`'s own.

A requirement judged with no violation passes; one violation fails it (a SHOULD warns); a
requirement the run never judged is a skip. Unproven in-flight verdicts (an abort the request
outlived with no evidence that it could not have ended first) are counted apart, never failed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.grounds import verdict
from conformance.load.judge import LOST
from conformance.load.tally import Tally
from conformance.requirements import by_id
from conformance.requirements.model import Requirement
from conformance.verdicts.results import Report, ServerInfo, decide, exit_code

SCHEMA = Path(__file__).with_name("load-report.schema.json")
KIND = "tito-load-report"
PERCENTILES = (50, 90, 95, 99)
BINS = 30


def requirement(rid: str) -> Requirement:
    """Every ID a load run judges is the catalogue's (LOAD-001 too: `checks/test_nothing_lost`)."""
    return by_id()[rid]


def __getattr__(name: str) -> Requirement:
    if name == "NOTHING_LOST":  # the name the first cut declared it under
        return by_id()[LOST]
    raise AttributeError(name)


def percentiles(values: list[float]) -> dict[str, float | int]:
    ordered = sorted(values)
    out: dict[str, float | int] = {"count": len(ordered)}
    if not ordered:
        return out
    for p in PERCENTILES:
        out[f"p{p}"] = round(ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))], 6)
    out["max"] = round(ordered[-1], 6)
    return out


def histogram(values: list[float]) -> dict[str, list[float]]:
    if not values:
        return {"edges": [], "counts": []}
    low, high = min(values), max(values)
    width = (high - low) / BINS or 1e-6
    counts = [0] * BINS
    for v in values:
        counts[min(BINS - 1, int((v - low) / width))] += 1
    edges = [round(low + i * width, 6) for i in range(BINS + 1)]
    return {"edges": edges, "counts": [float(c) for c in counts]}


def _timeline(tally: Tally) -> list[dict[str, Any]]:
    e2e: dict[int, list[float]] = {}
    ttft: dict[int, list[float]] = {}
    for at, seconds, _ in tally.e2e:
        e2e.setdefault(int(at), []).append(seconds)
    for at, seconds in tally.ttft:
        ttft.setdefault(int(at), []).append(seconds)
    rows = []
    for second in range(0, max([*tally.seconds, *e2e, 0]) + 1):
        bucket = tally.seconds.get(second, {})
        by = {k.split(":", 1)[1]: v for k, v in bucket.items() if k.startswith("violations:")}
        row: dict[str, Any] = {
            "second": second,
            "requests": bucket.get("requests", 0),
            "tokens": bucket.get("tokens", 0),
            "violations": bucket.get("violations", 0),
            "violations_by": by,
        }
        for name, samples in (("e2e", e2e), ("ttft", ttft)):
            found = percentiles(samples.get(second, []))
            row[f"{name}_p50"] = found.get("p50")
            row[f"{name}_p95"] = found.get("p95")
        rows.append(row)
    return rows


def build(
    tally: Tally,
    *,
    base_url: str,
    engines: list[str],
    features: list[str],
    limits: dict[str, Any],
    version: str | None,
    config: dict[str, Any],
    duration_s: float,
    marks: list[tuple[float, str, str]],
    workers: dict[str, dict[str, Any]],
    errors: list[str],
    locust_figures: dict[str, Any],
    loadavg: dict[str, Any],
) -> dict[str, Any]:
    """The JSON report of one run."""
    ids = sorted(set(tally.judged) | set(tally.violations) | set(tally.unproven))
    rows = []
    for rid in ids:
        req = requirement(rid)
        judged, bad = tally.judged.get(rid, 0), tally.violations.get(rid, 0)
        status = decide(req, [verdict.tallied(rid, judged, bad, "", "", 0.0)]).outcome
        rows.append(
            {
                "id": rid,
                "level": req.level.value,
                "title": req.title,
                "status": status.value,
                "judged": judged,
                "violations": bad,
                "unproven": tally.unproven.get(rid, 0),
                "first_violation": tally.first.get(rid),
            }
        )
    requests, tokens = tally.total("requests"), tally.total("tokens")
    streamed = [s for _, s, stream in tally.e2e if stream]
    bodies = [s for _, s, stream in tally.e2e if not stream]
    ttft = [s for _, s in tally.ttft]
    elapsed = max(duration_s, 1e-9)
    data: dict[str, Any] = {
        "kind": KIND,
        "suite_version": __version__,
        "started_at": tally.started_at,
        "duration_s": round(duration_s, 3),
        "server": {
            "base_url": base_url,
            "engines": engines,
            "version": version,
            "features": features,
            "limits": limits,
        },
        "config": config,
        "machine": loadavg,
        "requirements": rows,
        "figures": {
            "requests": requests,
            "tokens": tokens,
            "errors": tally.total("errors"),
            "lost": tally.total("lost"),
            "aborts": tally.total("aborts"),
            "hang_ups": tally.total("hang_ups"),
            "resubmitted": tally.total("resubmitted"),
            "retried_paused": tally.total("retried"),
            "requests_per_s": round(requests / elapsed, 3),
            "tokens_per_s": round(tokens / elapsed, 3),
            "body_requests_per_s": round(tally.total("body_requests") / elapsed, 3),
            "streamed_tokens_per_s": round(tally.total("streamed_tokens") / elapsed, 3),
            "ttft_s": percentiles(ttft),
            "itl_s": percentiles(tally.itl),
            "e2e_s": percentiles([s for _, s, _ in tally.e2e]),
            "e2e_stream_s": percentiles(streamed),
            "e2e_body_s": percentiles(bodies),
        },
        "histograms": {
            "ttft_s": histogram(ttft),
            "itl_s": histogram(tally.itl),
            "e2e_s": histogram([s for _, s, _ in tally.e2e]),
        },
        "timeline": _timeline(tally),
        "marks": [{"at_s": at, "what": what, "label": label} for at, what, label in marks],
        "workers": [
            {"id": k, "index": w.get("index", -1), "drained": bool(w.get("drained"))}
            for k, w in sorted(workers.items(), key=lambda kv: kv[1].get("index", -1))
        ],
        "locust": locust_figures,
        "harness_errors": errors,
    }
    report = report_of(data)
    data["verdict"] = "ERROR" if report.harness_error else report.summary.verdict
    data["exit_code"] = exit_code([report])
    return data


def report_of(data: dict[str, Any]) -> Report:
    """The run's verdicts as the suite's results model (JUnit, exit code)."""
    results = []
    for row in data["requirements"]:
        first = row.get("first_violation") or {}
        message = (
            f"{row['violations']} of {row['judged']} judged violate it; first at "
            f"{first.get('at_s')} s, {first.get('in_flight')} in flight: {first.get('message')}"
            if row["violations"]
            else f"{row['judged']} judged under load, none violates it"
            + (f" ({row['unproven']} unproven)" if row["unproven"] else "")
        )
        check = verdict.tallied(
            f"load::{row['id']}",
            row["judged"],
            row["violations"],
            message,
            first.get("reproducer", ""),
            data["duration_s"],
        )
        results.append(decide(requirement(row["id"]), [check]))
    server = data["server"]
    return Report(
        "tito-conformance load",
        data["suite_version"],
        "tito-api",
        ServerInfo(server["base_url"], server.get("version"), server["features"], []),
        str(data["started_at"]),
        data["duration_s"],
        results,
        harness_error="; ".join(data["harness_errors"]),
    )


def validate(data: dict[str, Any]) -> None:
    """Raise jsonschema's ValidationError when `data` is not a load report."""
    import jsonschema

    jsonschema.validate(data, json.loads(SCHEMA.read_text()))


def write(data: dict[str, Any], path: Path) -> None:
    validate(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}
