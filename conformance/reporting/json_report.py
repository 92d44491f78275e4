"""The JSON report: the documented, schema-checked source of truth of a run."""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from conformance.verdicts.levels import level_of
from conformance.verdicts.results import CheckResult, Report, RequirementResult

SCHEMA_FILE = "report.schema.json"


def to_dict(report: Report) -> dict[str, Any]:
    """Exactly the documented fields, nothing else (`product` only when the run was given one)."""
    s = report.summary
    product = {"product": dict(report.product)} if report.product else {}
    return {
        "suite": {
            "name": report.suite_name,
            "version": report.suite_version,
            "spec_version": report.spec_version,
            **_documents(),
        },
        "server": {
            "base_url": report.server.base_url,
            "version": report.server.version,
            "detected_features": list(report.server.detected_features),
            "claimed_features": list(report.server.claimed_features),
            "limits": dict(report.server.limits),
            "engines": list(report.server.engines),
            "router": report.server.router,
            "build": report.server.build,
            "profile": report.server.profile,
        },
        **product,
        "started_at": report.started_at,
        "duration_s": report.duration_s,
        "summary": {
            "passed": s.passed,
            "failed": s.failed,
            "skipped": s.skipped,
            "errors": s.errors,
            "warnings": s.warnings,
            "skipped_for_limits": s.skipped_for_limits,
            "incomplete": s.incomplete,
        },
        "level": level_of(report),
        "differences": [asdict(d) for d in report.differences()],
        "requirements": [_requirement(r, report.harness_error) for r in report.requirements],
    }


def _documents() -> dict[str, str]:
    """The hashes and the OpenAPI version of the documents this kit judges by."""
    from conformance.reporting.provenance import provenance

    keys = ("document_sha256", "openapi_version", "openapi_sha256")
    return {k: v for k, v in provenance().items() if k in keys}


def _requirement(result: RequirementResult, harness_error: str) -> dict[str, Any]:
    req = result.requirement
    reason = result.reason
    if harness_error and not result.checks:
        reason = f"not run: {harness_error}"
    return {
        "id": req.id,
        "level": req.level.value,
        "feature": req.feature.value,
        "text": req.text,
        "status": result.status.value,
        "reason": reason,
        "skip_kind": result.skip_kind.value or None,
        "blocked_by": result.blocked_by or None,
        "attribution": result.attribution or None,
        "checks": [_check(c) for c in result.checks],
    }


def _check(check: CheckResult) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": check.name,
        "status": check.status.value,
        "message": check.message,
        "reproducer": check.reproducer,
    }
    if check.skip_kind.value:
        entry["skip_kind"] = check.skip_kind.value
    if check.blocked_by:
        entry["blocked_by"] = check.blocked_by
    if check.measured:
        entry["measured"] = check.measured
    return entry


def document(reports: list[Report]) -> dict[str, Any]:
    """One report as is; several (one per embedded-mock profile) keyed by profile."""
    if len(reports) == 1:
        return to_dict(reports[0])
    return {"profiles": {r.server.profile or r.server.base_url: to_dict(r) for r in reports}}


@cache
def schema() -> dict[str, Any]:
    text = resources.files("conformance").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def validate(data: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError unless `data` is a valid report document."""
    Draft202012Validator(schema()).validate(data)


def write(reports: list[Report], path: Path) -> None:
    data = document(reports)
    validate(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
