"""JUnit XML: one testsuite per server (profile), one testcase per requirement."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.verdicts.results import Report, Status


def to_xml(reports: list[Report]) -> ET.Element:
    root = ET.Element("testsuites", name="tito-conformance")
    for report in reports:
        s = report.summary
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"tito-conformance[{report.server.profile or report.server.base_url}]",
            tests=str(len(report.requirements)),
            failures=str(s.failed + s.warnings),
            errors=str(s.errors),
            skipped=str(s.skipped),
            time=f"{report.duration_s:.3f}",
            timestamp=report.started_at,
        )
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("base_url", report.server.base_url),
            ("server_version", report.server.version or ""),
            ("detected_features", ",".join(report.server.detected_features)),
            ("claimed_features", ",".join(report.server.claimed_features)),
        ):
            ET.SubElement(props, "property", name=name, value=value)
        for result in report.requirements:
            req = result.requirement
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{req.feature.value}.{req.level.value}",
                name=f"{req.id} {req.title}",
                time=f"{sum(c.duration_s for c in result.checks):.3f}",
            )
            detail = "\n\n".join(
                f"{c.name}: {c.message}\n{c.reproducer}".strip()
                for c in result.checks
                if c.status is result.status
            )
            if result.status is Status.FAIL:
                # JUnit has no "warning": a SHOULD failure is a failure whose type names its level
                kind = f"{req.level.value}-violation"
                el = ET.SubElement(case, "failure", message=result.reason[:500], type=kind)
                el.text = detail
            elif result.status is Status.ERROR:
                el = ET.SubElement(case, "error", message=result.reason[:500])
                el.text = detail
            elif result.status is Status.SKIP:
                ET.SubElement(case, "skipped", message=result.reason[:500])
    return root


def write(reports: list[Report], path: Path) -> None:
    tree = ET.ElementTree(to_xml(reports))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
