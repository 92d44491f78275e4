"""The whole live run against the mock: suite per profile, watchdog restart, gate, artifacts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from conformance.diff.case import PROFILES
from conformance.diff.corpus import cases_for
from conformance.session import SuiteConfig
from conformance.verdicts.results import Status
from live import cli, deviations
from live.deviations import Deviation
from live.fidelity import CRASHERS, Intended, _is_mock, judge, load_intended, release_of
from live.launcher import LiveServer
from live.profiles import Backend, live_profile
from live.suite import run_suite
from live.watchdog import Watchdog
from loopback.ports import free_port


def test_a_server_that_dies_fails_one_check_and_is_restarted(tmp_path: Path) -> None:
    """The vLLM 0.32 tokens-only OOV crash, reproduced by the mock's oov-token-500 defect."""
    backend = Backend(
        "mock", "tiny-qwen3", sys.executable,
        extra_args=("--mock-itl-ms", "1", "--mock-defect", "oov-token-500"),
    )  # fmt: skip
    profile = live_profile("tokens-only")
    port = free_port()
    server = LiveServer(backend.argv(profile, port), port, log_path=tmp_path / "s.log")
    config = SuiteConfig(server.base_url, expect=profile.claims, profile=profile.name)
    with server:
        run = run_suite(server, config)
        assert [d.check.split("::")[-1] for d in run.deaths] == ["test_out_of_vocabulary"]
        # ERR-007 runs last: the restart waits for a next check, here a stand-in for one.
        assert not server.alive and not run.deaths[0].restarted
        forgiven: list[bool] = []
        client = SimpleNamespace(forgive_timeouts=lambda: forgiven.append(True))
        session = SimpleNamespace(client=client)
        watchdog = Watchdog(server, session, deaths=run.deaths)  # type: ignore[arg-type]
        watchdog.pytest_runtest_setup(None)  # type: ignore[arg-type]
        assert server.alive and server.healthy() and run.deaths[0].restarted
        assert server.restarts == 1 and forgiven == [True]
    result = run.report.result("ERR-007")
    assert result.status is Status.FAIL and "server died during this check" in result.reason
    listed = [Deviation("ERR-007", "vllm-bug", "", "", ("tokens-only",))]
    verdict = deviations.judge(run.report, listed)
    assert verdict.ok, deviations.render([verdict])
    assert run.transcripts and all(isinstance(t[1], tuple) for t in run.transcripts)


def test_cli_against_the_mock_writes_the_artifacts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = cli.main(["--backend", "mock", "--profile", "disabled", "--profile", "api-key",
                     "--out", str(out)])  # fmt: skip
    assert code == 0, (out / "gate.txt").read_text()
    names = sorted(p.name for p in out.iterdir())
    for profile in ("disabled", "api-key"):
        assert f"report-{profile}.json" in names and f"server-{profile}.log" in names
        assert f"transcripts-{profile}.jsonl" in names
    timings = json.loads((out / "timings.json").read_text())
    assert timings["api-key"]["start_s"] and timings["total_s"] > 0
    line = json.loads((out / "transcripts-api-key.jsonl").read_text().splitlines()[0])
    assert line["profile"] == "api-key" and "request" in line and "response" in line
    text = (out / "transcripts-api-key.jsonl").read_text()
    assert "tito-conformance-key" not in text, "the key is redacted"


def test_cli_fails_on_an_unlisted_failure(tmp_path: Path) -> None:
    code = cli.main(["--backend", "mock", "--profile", "scale-out", "--out", str(tmp_path),
                     "--server-arg=--mock-defect", "--server-arg=finish-reason-null"])  # fmt: skip
    assert code == 1
    assert "UNLISTED FAILURE" in (tmp_path / "gate.txt").read_text()


def test_cli_reports_a_server_that_cannot_start(tmp_path: Path) -> None:
    code = cli.main(["--backend", "mock", "--profile", "disabled", "--out", str(tmp_path),
                     "--server-arg=--no-such-flag"])  # fmt: skip
    assert code == 1
    gate = (tmp_path / "gate.txt").read_text()
    assert "HARNESS ERROR: server did not start" in gate
    assert "--no-such-flag" in gate or "unrecognized" in gate, "the log tail is shown"


def test_the_fidelity_diff_step_runs_the_suite_diff(tmp_path: Path) -> None:
    """Mock as the 'real' server here: the mock diffed against itself shows no difference.

    api-key runs the derender stream case: the intended list (about vLLM) is not applied, else
    its stream_state entry would be stale. The 'real' mock gets the tiny model's vocabulary, as
    the diff's mock has, so the same ids are out of range on both.
    """
    code = cli.main(["--backend", "mock", "--profile", "disabled", "--profile", "api-key",
                     "--out", str(tmp_path), "--diff",
                     "--server-arg=--mock-vocab-size", "--server-arg=2048"])  # fmt: skip
    gate = (tmp_path / "gate.txt").read_text()
    assert "fidelity diff [disabled] mock vs real: same" in gate
    assert "fidelity diff [api-key] mock vs real: same" in gate
    assert code == 0
    keyed = (tmp_path / "diff-api-key.txt").read_text()
    assert "--api-key <api-key>" in keyed and "tito-conformance-key" not in keyed
    assert (tmp_path / "diff-disabled.json").exists(), "the diff's report (with transcripts)"
    assert "fidelity gate: 10 cases, 0 differences" in (tmp_path / "diff-disabled.txt").read_text()


def test_a_diff_profile_diffs_that_profile_only(tmp_path: Path) -> None:
    """`--diff-profile` (live-frontend's releases): one server start per profile runs the suite
    and the fuzz, and the diff only where it is named."""
    code = cli.main(["--backend", "mock", "--profile", "disabled", "--profile", "tokens-only",
                     "--out", str(tmp_path), "--diff-profile", "disabled"])  # fmt: skip
    gate = (tmp_path / "gate.txt").read_text()
    assert "fidelity diff [disabled] mock vs real: same" in gate
    assert "fidelity diff [tokens-only]" not in gate
    assert not (tmp_path / "diff-tokens-only.json").exists()
    assert code == 0
    wrong = ["--backend", "mock", "--profile", "disabled", "--diff-profile", "api-key"]
    assert cli.main([*wrong, "--out", str(tmp_path / "wrong")]) == 2


def test_the_intended_list_names_real_cases_and_profiles() -> None:
    entries = load_intended()
    assert entries and all(e.reason and (e.cases or e.captures) for e in entries)
    for entry in entries:
        assert set(entry.profiles) <= set(PROFILES), entry
        ran = entry.profiles or PROFILES
        for case in entry.cases:
            assert any(case in {c.name for c in cases_for(p)} for p in ran), (case, entry)


def _report(profile: str, cases: dict[str, list[str]]) -> dict[str, object]:
    return {
        "profile": profile,
        "cases": [
            {"case": name, "differences": [
                {"location": p, "pattern": p, "kind": "missing key"} for p in patterns
            ]}
            for name, patterns in cases.items()
        ],
    }  # fmt: skip


def test_the_fidelity_gate_fails_unlisted_and_stale_differences() -> None:
    state = Intended("$.stream_state.*", "opaque", 14, cases=("stream",), profiles=("scale-out",))
    ok = judge(_report("scale-out", {"stream": ["$.stream_state.a"], "models": []}), [state])
    assert ok.ok and ok.listed == ["stream: $.stream_state.a: missing key"] and ok.cases == 2
    other = judge(_report("api-key", {"stream": ["$.stream_state.a"]}), [state])
    assert other.unlisted == ["stream: $.stream_state.a: missing key"], "listed for scale-out only"
    stale = judge(_report("scale-out", {"stream": [], "models": ["$.data"]}), [state])
    assert not stale.ok and stale.stale == ["stream: $.stream_state.* (row 14)"]
    assert stale.unlisted == ["models: $.data: missing key"]
    assert judge(_report("scale-out", {"models": []}), [state]).ok, "a case not run is not stale"


def test_intended_differences_per_release_and_races() -> None:
    """An entry naming releases holds only when the mock plays one of them (0.32 when the
    server's version is unknown); an intermittent one (0.30/0.31's n > 1 race) never goes
    stale, but still covers the difference when it shows."""
    race = Intended(
        "$sse:error events", "race", 27, cases=("n2",), releases=("0.31",), intermittent=True
    )
    shown = _report("scale-out", {"n2": ["$sse:error events"]})
    assert judge(shown, [race], "0.31").ok
    assert not judge(shown, [race], "0.32").ok, "not a difference the 0.32 mock may show"
    assert not judge(shown, [race]).ok, "unknown version: judged as 0.32"
    quiet = judge(_report("scale-out", {"n2": []}), [race], "0.31")
    assert quiet.ok and not quiet.stale
    assert (release_of("0.31.0+cpu"), release_of("0.34.0"), release_of("0.35.0")) == (
        "0.31",
        "0.34",
        None,
    )
    assert release_of(None) is None
    assert CRASHERS["0.30"] == CRASHERS["0.31"] == ("oov-token-id",)


def test_the_intended_list_is_about_vllm_not_the_mock() -> None:
    mock = Backend("mock", "tiny-qwen3", sys.executable)
    real = Backend("cpu", "tiny-qwen3", sys.executable)
    profile = live_profile("scale-out")
    assert _is_mock(LiveServer(mock.argv(profile, 1), 1))
    assert not _is_mock(LiveServer(real.argv(profile, 1), 1))
