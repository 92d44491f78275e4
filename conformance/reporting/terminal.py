"""The terminal summary: a table by feature, then every failure with its reproducer."""

from __future__ import annotations

from collections import defaultdict

from conformance.product import product_text
from conformance.requirements import Feature
from conformance.verdicts.levels import describe, level_of
from conformance.verdicts.results import Report, SkipKind, Status


def render(reports: list[Report], verbose: bool = False) -> str:
    """One block per report; over several profiles, one overall line closes it."""
    text = "\n\n".join(_one(r, verbose) for r in reports)
    return text + "\n\n" + overall(reports) if len(reports) > 1 else text


def overall(reports: list[Report]) -> str:
    """The verdict of a run over several profiles, on one line, naming the ones that failed."""
    sums = [r.summary for r in reports]
    names = [r.server.profile or r.server.base_url for r in reports]
    bad = [n for n, s in zip(names, sums, strict=True) if s.verdict == "FAILED"]
    short = [n for n, s in zip(names, sums, strict=True) if s.verdict == "INCOMPLETE"]
    verdict = f"FAILED in {', '.join(bad)}" if bad else "PASSED"
    if short:
        verdict = f"{verdict if bad else 'INCOMPLETE'} (inconclusive in {', '.join(short)})"
    return (
        f"== overall ({len(reports)} profiles: {', '.join(names)}): {verdict}: "
        f"{sum(s.passed for s in sums)} passed, {sum(s.failed for s in sums)} failed, "
        f"{sum(s.warnings for s in sums)} warnings, {sum(s.skipped for s in sums)} skipped, "
        f"{sum(s.errors for s in sums)} errors in {sum(r.duration_s for r in reports):.1f} s"
    )


def _one(report: Report, verbose: bool) -> str:
    server = report.server
    lines = [
        f"== {report.suite_name} {report.suite_version} against {server.base_url}"
        + (f" (profile {server.profile})" if server.profile else ""),
        f"   server version: {server.version or 'unknown'}; "
        f"detected: {', '.join(server.detected_features) or 'nothing'}; "
        f"claimed: {', '.join(server.claimed_features) or 'nothing'}",
    ]
    if report.product:
        lines.append(f"   product: {product_text(report.product)}")
    if server.limits_text:
        lines.append(f"   limits: {server.limits_text}")
    if report.harness_error:
        lines.append(f"   HARNESS ERROR: {report.harness_error}")
    differences = report.differences()
    if differences:
        lines.append(f"   differs from the document in {len(differences)} requirement(s):")
        for d in differences:
            lines.append(f"   - {d.title} — {d.requirement} [{d.level}]: {d.evidence}")
    counts: dict[Feature, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in report.requirements:
        key = "warn" if r.is_warning else r.status.value
        counts[r.requirement.feature][key] += 1
    header = f"   {'feature':<18}{'pass':>6}{'fail':>6}{'warn':>6}{'skip':>6}{'error':>7}"
    lines += [header, "   " + "-" * (len(header) - 3)]
    for feature in Feature:
        if feature not in counts:
            continue
        c = counts[feature]
        lines.append(
            f"   {feature.value:<18}{c['pass']:>6}{c['fail']:>6}{c['warn']:>6}"
            f"{c['skip']:>6}{c['error']:>7}"
        )
    for r in report.requirements:
        if r.status in (Status.FAIL, Status.ERROR):
            label = "WARN" if r.is_warning else r.status.value.upper()
            whose = f" (the {r.attribution}'s)" if r.attribution else ""
            lines.append(
                f"   {label} {r.requirement.id} [{r.requirement.level.value}] "
                f"{r.requirement.title}{whose}"
            )
            for check in r.checks:
                if check.status is r.status:
                    lines.append(f"      {check.name}: {check.message[:400]}")
                    lines += _reproducer(check.reproducer)
        elif verbose and r.status is Status.SKIP:
            lines.append(f"   skip {r.requirement.id}: {r.reason[:200]}")
    s = report.summary
    limited = [r for r in report.requirements if r.skip_kind is SkipKind.LIMIT]
    if limited:
        lines.append(
            f"   {len(limited)} requirement(s) not exercised under this server's limits: "
            + ", ".join(r.requirement.id for r in limited)
        )
        for r in limited if verbose else limited[:3]:
            lines.append(f"      {r.requirement.id}: {r.reason[:200]}")
    lines.append(
        f"   {s.verdict}: {s.passed} passed, {s.failed} failed, {s.warnings} warnings, "
        f"{s.skipped} skipped ({s.skipped_for_limits} for limits), {s.errors} errors "
        f"({s.incomplete} inconclusive) in {report.duration_s:.1f} s"
    )
    lines.append(f"   level: {describe(level_of(report))}")
    return "\n".join(lines)


def _reproducer(text: str) -> list[str]:
    """A reproducer's line: its curl; an in-flight script's request curl, and where the
    whole script is (the JSON report and JUnit carry it)."""
    lines = text.splitlines()
    if not lines:
        return []
    if not lines[0].startswith("#!"):
        return [f"      $ {lines[0][:300]}"]
    sent = next((line for line in lines if line.startswith("curl ")), "")
    return [
        f"      $ {sent[:300]}",
        f"      (and what it does in flight: a {len(lines)}-line sh script, in the JSON report)",
    ]
