"""No secret in any report (issue 28, item 6): a keyed run's every output says `$TITO_API_KEY`.

The fuzzer's reproducers are schemathesis's curl of the case as sent, the key among its
headers; the suite's are the kit's own curl, which always left the key out. Both now go through
`conformance.wire.exchange` where their records are made. The end-to-end test runs the CLI as a
user does, against a keyed mock with a defect the suite and the fuzzer's stateful abort both
fail, renders the matrix from its JSON, and greps every file and both streams for the key.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.fuzz.findings import Finding
from conformance.server.process import ServerProcess, mock_argv
from conformance.verdicts.results import CheckResult, Status
from conformance.wire import auth_header
from conformance.wire import exchange as credentials
from conformance.wire.exchange import PLACEHOLDER, redact
from loopback.ports import free_port

KEY = "sk-tito-test-7c1e09b2d4"


def test_a_schemathesis_curl_says_the_variable_as_the_suite_does() -> None:
    auth_header(KEY)  # the kit learns a key where it spells the header
    curl = f"curl -X POST -H 'Authorization: Bearer {KEY}' -H 'Accept: */*'"
    assert redact(curl) == f"curl -X POST -H {credentials.HEADER} -H 'Accept: */*'"
    assert credentials.HEADER == '"Authorization: Bearer $TITO_API_KEY"'  # the suite's spelling
    assert redact(f"the server said: bad key {KEY}!") == f"the server said: bad key {PLACEHOLDER}!"
    assert redact("nothing to hide") == "nothing to hide"


def test_a_short_key_is_redacted_where_it_is_sent_only() -> None:
    credentials.conceal("K1")
    assert redact("-H 'authorization: bearer K1'") == f'-H "Authorization: Bearer {PLACEHOLDER}"'
    assert redact("Bearer K1, then Bearer K12") == f"Bearer {PLACEHOLDER}, then Bearer K12"
    assert redact("K1 is also a word") == "K1 is also a word"  # too short to tell from words


def test_every_record_an_output_is_made_from_is_redacted() -> None:
    auth_header(KEY)
    check = CheckResult("x", Status.FAIL, f"echoed {KEY}", f"curl -H 'Authorization: Bearer {KEY}'")
    assert KEY not in check.message + check.reproducer
    finding = Finding("generate", "POST /g", "stateful", "c", 200, f"m {KEY}", f"{KEY}", 0, 0)
    assert KEY not in finding.curl + finding.message + finding.reproducer


def _tito(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from conformance.cli import main; raise SystemExit(main())"]
    return subprocess.run(
        [*command, *argv], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def test_a_failing_keyed_run_writes_the_key_nowhere(tmp_path: Path) -> None:
    """A keyed mock that ends aborted requests with finish_reason length fails ABORT-002 in the
    suite and in the fuzzer's stateful abort, whose reproducer carried `Authorization: Bearer
    <the key>` into the JSON report and JUnit. The server's own word (STATEMENT), not a timing
    bound: with `abort-ignored` the fuzz filed nothing on a busy machine, and rightly so."""
    port = free_port()
    defect = ["abort-finish-reason-length"]
    argv = mock_argv(port, ["--enable-scale-out", "--api-key", KEY], defect)
    with ServerProcess(argv, port) as server:
        ran = _tito(
            "run",
            "--base-url",
            server.base_url,
            "--api-key",
            KEY,
            "--expect",
            "api-key",
            "--fuzz-examples",
            "3",
            "-v",
            "--json-report",
            str(tmp_path / "report.json"),
            "--junit-xml",
            str(tmp_path / "junit.xml"),
            cwd=tmp_path,
        )
    assert ran.returncode == 1, ran.stdout[-2000:] + ran.stderr[-2000:]
    rendered = _tito(
        "report",
        str(tmp_path / "report.json"),
        "--html",
        str(tmp_path / "matrix.html"),
        "--markdown",
        str(tmp_path / "matrix.md"),
        cwd=tmp_path,
    )
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    failed = {r["id"]: r for r in report["requirements"] if r["status"] == "fail"}
    reproducers = [c["reproducer"] for c in failed["ABORT-002"]["checks"] if c["reproducer"]]
    fuzzed = [r for r in reproducers if "tito-conformance fuzz --seed" in r]
    assert fuzzed, f"no fuzz reproducer among ABORT-002's: {reproducers}"  # the leak's path
    assert all(PLACEHOLDER in r for r in reproducers), reproducers
    outputs = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in _files(tmp_path)}
    outputs |= {"run stdout": ran.stdout, "run stderr": ran.stderr}
    outputs |= {"report stdout": rendered.stdout, "report stderr": rendered.stderr}
    assert {"report.json", "junit.xml", "matrix.html", "matrix.md"} <= set(outputs)
    leaks = {name: _around(text) for name, text in outputs.items() if KEY in text}
    assert not leaks, leaks


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _around(text: str) -> str:
    at = text.index(KEY)
    return text[max(0, at - 200) : at + 60]


@pytest.fixture(autouse=True)
def _forget_keys() -> Iterator[None]:
    """Keys learned here stay out of other tests' expectations (the registry is per process)."""
    before = credentials.known()
    yield
    credentials._known.intersection_update(before)
