"""`drift --behaviour` (issue 29, item 5): each release's answers to the corpus, compared.

Offline from the answers a real run recorded (`fixtures/drift-behaviour/<V>.json`: vLLM
0.32.0, 0.33.0 and 0.34.0's own apps over the simulated core, `--behaviour-record`); the last
test runs the probe in vLLM 0.34.0's environment when one is installed, and skips otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.diff.corpus import cases_for
from live.drift import behaviour, cli, probe
from live.drift.behaviour import Behaviour, Outcome, ReleaseBehaviour, changes
from live.drift.corpus import EXTRA_CASES, PROFILE, behaviour_corpus, to_json
from live.drift.report import ReleaseDrift, behaviour_json, render_behaviour

RECORDED = Path(__file__).parent / "fixtures" / "drift-behaviour"
RELEASES = ["0.32.0", "0.33.0", "0.34.0"]


@pytest.fixture(scope="module")
def recorded() -> Behaviour:
    cases = behaviour_corpus()
    return Behaviour(cases, [behaviour.recorded(v, RECORDED) for v in RELEASES])


def _change(found: Behaviour, case: str) -> behaviour.Change:
    return next(c for c in found.changes if c.case == case)


def test_the_corpus_is_the_diff_corpus_and_the_known_changes() -> None:
    cases = behaviour_corpus()
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    diff = [c.name for c in cases_for(PROFILE) if c.abort is None]
    assert names == diff + [c.name for c in EXTRA_CASES]
    assert not any(c.abort for c in cases)  # in-flight aborts time a second request
    sent = {c["name"]: c for c in to_json(cases)}
    assert sent["abort-integer-ids"]["body"] == {"request_ids": [1, 2]}
    assert sent["invalid-json"]["raw"] is not None and sent["generate-get"]["body"] is None
    json.dumps(to_json(cases))  # what probe.py reads


def test_every_recorded_release_answered_every_request(recorded: Behaviour) -> None:
    names = {c.name for c in recorded.cases}
    for release in recorded.releases:
        assert release.skipped is None, release.skipped
        assert set(release.outcomes) == names, release.version


def test_0_34_validates_the_abort_body(recorded: Behaviour) -> None:
    missing = _change(recorded, "abort-missing-ids")
    assert (missing.before, missing.after, missing.kind) == ("0.33.0", "0.34.0", "error")
    assert missing.was.message == "Missing 'request_ids' in request body"
    assert missing.now.status == 400 and missing.now.param == "body.request_ids"
    integers = _change(recorded, "abort-integer-ids")
    assert (integers.was.status, integers.now.status, integers.kind) == (200, 400, "status")
    assert integers.now.param == "body.request_ids"


def test_0_34_moves_prompt_logprob_start(recorded: Behaviour) -> None:
    alone = _change(recorded, "prompt-logprob-start")  # with prompt_logprobs alone
    assert (alone.before, alone.was.status, alone.now.status) == ("0.33.0", 400, 200)
    assert "requires prompt_logprob_token_ids" in (alone.was.message or "")
    last = _change(recorded, "prompt-logprob-start-last-row")  # start >= prompt_len - 1
    assert (last.kind, last.now.status, last.now.param) == ("error", 400, "prompt_logprob_start")
    assert "prompt_len - 1" in (last.now.message or "")


def test_0_34_stops_rejecting_empty_tools_on_chat_render(recorded: Behaviour) -> None:
    tools = _change(recorded, "render-chat-tools-empty")
    assert (tools.before, tools.after) == ("0.33.0", "0.34.0")
    assert (tools.was.status, tools.was.param, tools.now.status) == (400, "tools", 200)
    assert not [
        c for c in recorded.changes if c.case == "render-chat-tools-empty" and c.after == "0.33.0"
    ]  # 0.32 rejected it too


def test_unchanged_answers_are_not_named(recorded: Behaviour) -> None:
    named = {c.case for c in recorded.changes}
    assert "basic" not in named and "empty-token-ids" not in named


def test_changes_skip_a_release_that_did_not_answer() -> None:
    cases = behaviour_corpus()[:2]
    a, b = cases[0].name, cases[1].name
    releases = [
        ReleaseBehaviour("1.0", {a: Outcome(200), b: Outcome(400, "no", param="x")}),
        ReleaseBehaviour("1.1", skipped="no release environment"),
        ReleaseBehaviour("1.2", {a: Outcome(400, "now no"), b: Outcome(400, "no!", param="x")}),
    ]
    found = {(c.case, c.before, c.after, c.kind) for c in changes(releases, cases)}
    assert found == {(a, "1.0", "1.2", "status"), (b, "1.0", "1.2", "error")}


def test_pydantic_links_are_not_a_change() -> None:
    url = "{'type': 'missing', 'url': 'https://errors.pydantic.dev/2.%s/v/missing'}"
    one = Outcome.of({"status": 400, "error": {"message": url % 12, "param": "body.x"}})
    two = Outcome.of({"status": 400, "error": {"message": url % 14, "param": "body.x"}})
    assert one == two and "pydantic.dev" not in (one.message or "")
    assert Outcome(200).describe() == "200"
    assert one.describe().startswith("400 param=body.x: ")


def test_a_release_without_an_environment_is_skipped_with_the_reason(tmp_path: Path) -> None:
    found = behaviour.run("9.9.9", behaviour_corpus(), root=tmp_path, record=tmp_path)
    assert found.skipped is not None and "no release environment" in found.skipped
    assert "--install-releases" in found.skipped
    text = render_behaviour(Behaviour(behaviour_corpus(), [found]))
    assert "vLLM 9.9.9: skipped: no release environment" in text


def test_a_broken_environment_is_a_skip_not_a_crash(tmp_path: Path) -> None:
    venv = tmp_path / "frontend-9.9.9"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\necho broken >&2\nexit 1\n")
    (venv / "bin" / "python").chmod(0o755)
    (venv / "tito-frontend.json").write_text("{}")
    found = behaviour.run("9.9.9", behaviour_corpus(), root=tmp_path, record=tmp_path)
    assert found.skipped is not None and found.skipped.startswith("no tiny model")


def test_the_probe_reads_errors_as_the_server_gives_them() -> None:
    error = {"error": {"message": "no", "type": "BadRequestError", "param": "tools", "code": 400}}
    assert probe.outcome(400, error) == {
        "status": 400,
        "error": {"message": "no", "type": "BadRequestError", "param": "tools"},
    }
    assert probe.outcome(405, {"detail": "Method Not Allowed"})["error"]["message"] == (
        "Method Not Allowed"
    )
    assert probe.outcome(200, {"choices": []}) == {"status": 200, "error": None}
    assert probe.outcome(200, None) == {"status": 200, "error": None}  # a stream without errors
    assert probe.outcome(200, error)["error"]["param"] == "tools"  # a stream's error event
    assert probe.outcome(None, "no answer in 120 s")["error"]["message"] == "no answer in 120 s"


def test_cli_names_the_changes_beside_the_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "_release", lambda v, *_: ReleaseDrift(v))  # no wheel needed
    out = tmp_path / "drift.json"
    argv = ["--vllm-version", ",".join([*RELEASES, "9.9.9"]), "--json", str(out)]
    assert cli.main([*argv, "--behaviour-from", str(RECORDED)]) == 0
    text = capsys.readouterr().out
    assert "0.33.0 -> 0.34.0: " in text and "~ status abort-integer-ids" in text
    assert "vLLM 9.9.9: skipped: no recorded answers" in text
    data = json.loads(out.read_text())["behaviour"]
    assert data["requests"] == len(behaviour_corpus())
    assert [r["version"] for r in data["releases"]] == [*RELEASES, "9.9.9"]
    kinds = {(c["request"], c["from"], c["to"]): c["kind"] for c in data["changes"]}
    assert kinds[("abort-missing-ids", "0.33.0", "0.34.0")] == "error"
    assert kinds[("render-chat-tools-empty", "0.33.0", "0.34.0")] == "status"
    assert data == behaviour_json(Behaviour(behaviour_corpus(), _recorded_plus_missing()))


def _recorded_plus_missing() -> list[ReleaseBehaviour]:
    return [behaviour.recorded(v, RECORDED) for v in [*RELEASES, "9.9.9"]]


NEWEST = "0.34.0"


@pytest.mark.skipif(
    behaviour.environment(NEWEST) is None,
    reason=f"needs vLLM {NEWEST}'s frontend environment (`tito-mock --real-frontend {NEWEST}` "
    "or `drift --behaviour --install-releases` makes it); the recorded answers cover the rest",
)
def test_the_probe_runs_in_the_release_environment(tmp_path: Path) -> None:
    wanted = {"abort-missing-ids", "prompt-logprob-start", "render-chat-tools-empty", "health"}
    cases = [c for c in behaviour_corpus() if c.name in wanted]
    found = behaviour.run(NEWEST, cases, record=tmp_path)
    assert found.skipped is None, found.skipped
    expected = behaviour.load(RECORDED / f"{NEWEST}.json").outcomes
    assert found.outcomes == {name: expected[name] for name in wanted}
