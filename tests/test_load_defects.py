"""`tito-conformance load` catches what only load shows, and nothing on a correct mock.

Each defect of the mock's catalogue that shows only under load (`Defect.shows == "load"`;
`run` sees none of them: tests/test_conformance_blast_radius.py holds their radius to 0) is
caught by `load` at its default settings, under the requirement the defect names, with a curl
reproducer, well within 60 s, and with nothing else violated. A correct mock gives no
violation under load in any profile. The runs are `benchmarks/bench_load_defects.py`'s, which
prints the time to catch each; these are shorter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks.bench_load_defects import SHOULD_ONLY, UNDER_LOAD, catch, load_run
from conformance.load import engine_rules
from conformance.load.engines import Read
from conformance.load.mix import Facts
from conformance.profiles import ALL_PROFILES, MOCK_KNOBS
from conformance.server.process import ServerProcess, mock_argv, start_on_a_free_port
from conformance.tito.answers import Answer
from mock_server.behaviour.defects import DEFECTS, PACED

CATCH_S = 60.0
"""The issue's bound: caught within a minute of the load starting."""
RUN_S = 12.0
"""The load run of a test: every defect but the lost stream shows within seconds; the lost
stream shows when its client gives up (the 30 s timeout), while the run drains."""


def test_every_load_only_defect_names_a_requirement_and_a_threshold() -> None:
    assert len(UNDER_LOAD) >= 6
    for name in UNDER_LOAD:
        defect = DEFECTS[name]
        assert defect.requirements and defect.policy is not None, name
        assert "--mock-itl-ms" in defect.flags, f"{name}: paced, so 16 users crowd the engine"


@pytest.mark.parametrize("defect", UNDER_LOAD)
def test_load_catches_a_defect_run_does_not_see(defect: str) -> None:
    found = catch(defect, RUN_S)
    declared = set(DEFECTS[defect].requirements)
    assert set(found["first"]) == declared, found
    for rid, first in found["first"].items():
        assert first["reproducer"].startswith("curl "), (rid, first)
        assert 0 <= first["at_s"] <= CATCH_S, (rid, first)
    assert found["others"] == [], found
    assert found["exit_code"] == 1, found


@pytest.mark.parametrize("defect", ["disconnect-no-abort"])
def test_load_also_judges_hang_ups(defect: str) -> None:
    """`run`'s defect of a stream left running once its client hung up: `load` hangs up on
    some of its streams and reads whether the engines let go (ABORT-009, a SHOULD: the run
    warns, exit 0)."""
    found = catch(defect, RUN_S, PACED)
    assert set(found["first"]) == {"ABORT-009"} and found["others"] == [], found
    assert "engine state" in found["first"]["ABORT-009"]["message"], found


@pytest.mark.parametrize("profile", ["scale-out", "tokens-only", "disabled", "api-key", "dp"])
def test_a_correct_mock_under_load_violates_nothing_in(profile: str) -> None:
    p = ALL_PROFILES[profile]

    def server_for(port: int) -> ServerProcess:
        argv = mock_argv(port, [*p.flags, *MOCK_KNOBS, *PACED])
        return ServerProcess(argv, port, env=p.env)

    with start_on_a_free_port(server_for) as server:
        if not p.features & {"scale-out", "tokens-only"}:  # disabled: nothing to drive
            done = subprocess.run(
                [sys.executable, "-m", "conformance.load", "--base-url", server.base_url],
                capture_output=True,
                text=True,
                timeout=120,
                env=dict(os.environ),
            )
            assert done.returncode == 2, done.stderr[-2000:]
            assert "does not serve generate (disabled)" in done.stderr, done.stderr[-2000:]
            assert "Traceback" not in done.stderr
            return
        code, data = load_run(server.base_url, p.api_key, RUN_S)
    bad = {r["id"]: r["first_violation"] for r in data["requirements"] if r["violations"]}
    assert set(bad) <= SHOULD_ONLY, json.dumps(bad, indent=1)[:3000]
    assert code == 0 and data["verdict"] == "PASSED", data["harness_errors"]
    assert data["figures"]["lost"] == 0 and data["figures"]["requests"] > 50
    judged = {r["id"] for r in data["requirements"] if r["judged"]}
    assert {"LOAD-001", "GEN-RESP-003", "GEN-REQ-006"} <= judged, sorted(judged)
    if profile == "dp":
        assert "DP-001" in judged


# ---------------------------------------- the rules that read the engines, on their own


def _answer(temperature: float, ranks: list[int]) -> Answer:
    params = {"max_tokens": len(ranks), "temperature": temperature, "logprobs": 1}
    content = [{"token_id": 5 + i, "logprob": -0.5, "rank": r} for i, r in enumerate(ranks)]
    choice = {"index": 0, "token_ids": [5 + i for i in range(len(ranks))]}
    choice["logprobs"] = {"content": content}
    return Answer("generate r1", {"token_ids": [1], "sampling_params": params}, (choice,), False)


def test_greedy_ranks_fail_a_temperature_0_token_of_rank_2() -> None:
    assert engine_rules.greedy_ranks(_answer(0, [1, 1, 1])) == 1
    assert engine_rules.greedy_ranks(_answer(1.0, [1, 7, 2])) == 0  # sampled: not judged
    with pytest.raises(AssertionError, match="rank 98 at position 1"):
        engine_rules.greedy_ranks(_answer(0, [1, 98, 1]))


def test_a_pin_held_by_another_rank_fails_dp_001() -> None:
    on = [Read(0.01, 0.02, True, ranks=("1",))]
    assert engine_rules.rank_held([Read(0.01, 0.02, True, ranks=("0",))], 0, "r") == 1
    assert engine_rules.rank_held([Read(0.01, 0.02, False)], 0, "r") == 0  # ended: unknown
    with pytest.raises(AssertionError, match=r"rank\(s\) \['1'\] held it"):
        engine_rules.rank_held(on, 0, "r")


def test_a_hung_up_stream_fails_only_when_still_held_past_the_grace() -> None:
    facts = Facts(itl_s=0.003)
    gone = [Read(0.01, 0.02, False)]  # let go before its 399 tokens' 1.2 s were up
    assert engine_rules.let_go(gone, facts, 399, "r") == 1
    assert engine_rules.let_go(gone, Facts(itl_s=0.0), 399, "r") == 0  # could have ended
    let_go = [Read(0.01, 0.02, True, True), Read(0.3, 0.31, False)]
    assert engine_rules.let_go(let_go, facts, 399, "r") == 1
    kept = [Read(0.01, 0.02, True, True), Read(0.3, 0.31, True, True)]
    with pytest.raises(AssertionError, match="engine state"):
        engine_rules.let_go(kept, facts, 399, "r")
