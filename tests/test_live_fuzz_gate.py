"""The fuzzer's known-deviations gate: listed findings pass, unlisted ones and gone ones fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from conformance import session as session_mod
from conformance.fuzz.campaign import FuzzResult
from conformance.fuzz.findings import Finding, GroupStats
from conformance.fuzz.settings import FuzzConfig, ServerFacts
from live import cli, deviations, fuzz_gate
from live.deviations import Deviation, FuzzMatch, Reproducer

NON_UTF8 = Reproducer(
    "POST", "/inference/v1/generate", (("Content-Type", "application/json"),), b"\xff",
    400, ("detail",),
)  # fmt: skip
BODY = Deviation(
    "ERR-002", "vllm-bug", "detail body", "replay",
    fuzz=FuzzMatch(("generate",), ("negative",), ("error_body_shape",), NON_UTF8),
)  # fmt: skip
OOV = Deviation(
    "ERR-007", "vllm-bug", "crash", "fuzz", ("tokens-only",),
    FuzzMatch(("generate",), ("out-of-vocabulary",), ("server_survives",)),
)  # fmt: skip


def finding(op: str, group: str, check: str, rid: str) -> Finding:
    return Finding(op, f"POST /{op}", group, check, 400, "msg", "curl ...", 1234, 3, (rid,))


def result(
    findings: list[Finding], groups: tuple[str, ...] = ("negative",), profile: str = "scale-out"
) -> FuzzResult:
    stats = [GroupStats("generate", g, cases=5) for g in groups]
    facts = ServerFacts(profile)
    return FuzzResult(FuzzConfig(), facts, findings, stats, "now", 1.0)


def test_a_listed_finding_passes_and_an_unlisted_one_fails() -> None:
    listed = [BODY]
    replays = {fuzz_gate.label(BODY): fuzz_gate.Replay(True, "400 detail")}
    ok = fuzz_gate.judge(
        result([finding("generate", "negative", "error_body_shape", "ERR-002")]),
        listed, replays, "0.32.0", "scale-out",
    )  # fmt: skip
    assert ok.ok and ok.expected == [fuzz_gate.label(BODY)], fuzz_gate.render([ok])
    other = finding("renderCompletions", "negative", "error_body_shape", "ERR-002")
    bad = fuzz_gate.judge(result([other]), listed, replays, "0.32.0", "scale-out")
    assert not bad.ok and "renderCompletions" in bad.unexpected[0]
    assert "UNLISTED FINDING ERR-002 [renderCompletions" in fuzz_gate.render([bad])


def test_a_replay_that_no_longer_deviates_makes_the_entry_stale() -> None:
    replays = {fuzz_gate.label(BODY): fuzz_gate.Replay(False, "400 b'{\"error\": ...}'")}
    verdict = fuzz_gate.judge(result([]), [BODY], replays, "0.32.0", "scale-out")
    assert not verdict.ok and verdict.stale
    assert "STALE (listed but gone, remove it): ERR-002" in fuzz_gate.render([verdict])


def test_without_a_reproducer_the_fuzzer_must_find_it_where_it_looked() -> None:
    found = finding("generate", "out-of-vocabulary", "server_survives", "ERR-007")
    ok = fuzz_gate.judge(
        result([found], ("out-of-vocabulary",)), [OOV], {}, "0.32.0", "tokens-only"
    )
    assert ok.ok and ok.expected
    gone = fuzz_gate.judge(result([], ("out-of-vocabulary",)), [OOV], {}, "0.32.0", "tokens-only")
    assert not gone.ok and "exercised it and found nothing" in gone.stale[0]
    unlooked = fuzz_gate.judge(result([], ("negative",)), [OOV], {}, "0.32.0", "tokens-only")
    assert unlooked.ok and unlooked.not_exercised
    elsewhere = fuzz_gate.judge(result([found]), [OOV], {}, "0.32.0", "scale-out")
    assert not elsewhere.ok, "the entry is scoped to tokens-only"


@respx.mock
def test_replay_matches_status_and_keys() -> None:
    route = respx.post("http://srv/inference/v1/generate")
    route.mock(return_value=httpx.Response(400, json={"detail": "There was an error"}))
    assert fuzz_gate.replay("http://srv", "k", NON_UTF8).deviant
    assert route.calls.last.request.content == b"\xff"
    assert route.calls.last.request.headers["authorization"] == "Bearer k"
    route.mock(return_value=httpx.Response(400, json={"error": {"message": "x"}}))
    assert not fuzz_gate.replay("http://srv", None, NON_UTF8).deviant
    route.mock(return_value=httpx.Response(500, text="boom"))
    assert not fuzz_gate.replay("http://srv", None, NON_UTF8).deviant
    route.mock(side_effect=httpx.ConnectError("refused"))
    gone = fuzz_gate.replay("http://srv", None, NON_UTF8)
    assert not gone.deviant and "no answer" in gone.observed


def test_the_shipped_fuzz_entries_parse_and_stay_out_of_the_suite_gate() -> None:
    listed = deviations.for_version(deviations.load(), "0.32.0")
    fuzzed = {d.id: d for d in listed if d.fuzz is not None}
    assert set(fuzzed) == {"ERR-002", "ERR-007", "WV-007", "ERR-003"}
    rep = fuzzed["ERR-002"].fuzz.reproducer  # type: ignore[union-attr]
    assert rep is not None and rep.body == b"\xff" and rep.answers_keys == ("detail",)
    assert fuzzed["ERR-007"].fuzz.reproducer is None  # type: ignore[union-attr]
    assert all(d.evidence and d.symptom for d in fuzzed.values())


def test_a_reproducer_must_say_what_the_deviant_answer_is(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "versions:\n  '0.32.0':\n    - id: ERR-002\n      kind: vllm-bug\n"
        "      fuzz: {reproducer: {path: /x, body: {a: 1}}}\n"
    )
    with pytest.raises(ValueError, match="answers"):
        deviations.load(path)


def _deviations(tmp_path: Path, with_fuzz_entry: bool) -> Path:
    text = "versions:\n  '0.32.0':\n    - {id: ERR-007, kind: vllm-bug, profiles: [tokens-only]}\n"
    if with_fuzz_entry:
        text += (
            "    - id: ERR-007\n      kind: vllm-bug\n      profiles: [tokens-only]\n"
            "      fuzz: {operations: [generate], groups: [out-of-vocabulary]}\n"
        )
    path = tmp_path / "deviations.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("listed", [True, False])
def test_live_fuzz_against_a_crashing_mock_is_gated_on_the_list(
    tmp_path: Path, listed: bool
) -> None:
    """The vLLM 0.32 tokens-only OOV crash, as the mock's oov-token-500 defect, end to end."""
    out = tmp_path / "out"
    code = cli.main([
        "--backend", "mock", "--profile", "tokens-only", "--out", str(out),
        "--fuzz", "--fuzz-examples", "3",
        "--deviations", str(_deviations(tmp_path, listed)),
        "--server-arg=--mock-defect", "--server-arg=oov-token-500",
    ])  # fmt: skip
    gate = (out / "gate.txt").read_text()
    summary = (out / "fuzz-tokens-only.txt").read_text()
    assert "server gone" in summary and (out / "fuzz-tokens-only.json").exists()
    if listed:
        assert code == 0, gate
        assert "listed deviation, still found: ERR-007" in gate
    else:
        assert code == 1 and "UNLISTED FINDING ERR-007 [generate, out-of-vocabulary" in gate


def test_a_live_run_with_the_fuzz_probes_the_server_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fuzz judges by what the suite's probe learned (`Report.learned`), not a probe of
    its own."""
    probes: list[str] = []
    probe = session_mod.probe

    def counted(client: Any, **kwargs: Any) -> Any:
        probes.append(client.base_url)
        return probe(client, **kwargs)

    monkeypatch.setattr(session_mod, "probe", counted)
    out = tmp_path / "out"
    code = cli.main([
        "--backend", "mock", "--profile", "scale-out", "--out", str(out),
        "--fuzz", "--fuzz-examples", "1",
    ])  # fmt: skip
    assert code == 0, (out / "gate.txt").read_text()
    assert (out / "fuzz-scale-out.json").exists()
    assert len(probes) == 1, probes
