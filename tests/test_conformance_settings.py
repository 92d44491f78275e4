"""A correct server passes at any speed and configuration: `tito-conformance run` (the fuzz
folded in, as a user runs it) against the correct mock in every setting of
`benchmarks/bench_settings.py` (latency, capacity, limits, vocabulary, DP, API key, tokens-only,
every serve flag the document names alone and together, every core busy) exits 0 with 0 fail,
0 warn, 0 error, and is not hollow."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from benchmarks.bench_abort_family import DEFECTS, one_setting
from benchmarks.bench_settings import (
    BY_NAME,
    IN_FLIGHT,
    IN_FLIGHT_SETTINGS,
    SETTINGS,
    Setting,
    busy_cores,
    problems,
    run_setting,
    server_env,
)
from conformance.profiles import MOCK_KNOBS
from mock_server.behaviour.config import parse_args


def _flag(setting: Setting, name: str) -> str | None:
    """The last value of `name` in the setting's flags (argparse keeps the last)."""
    values = [setting.flags[i + 1] for i, f in enumerate(setting.flags[:-1]) if f == name]
    return values[-1] if values else None


def test_matrix_spans_what_the_issue_asks() -> None:
    assert len(SETTINGS) >= 20
    assert len(BY_NAME) == len(SETTINGS), "setting names must be unique"
    assert any(not _flag(s, "--mock-itl-ms") and not _flag(s, "--mock-ttft-ms") for s in SETTINGS)
    assert any(float(_flag(s, "--mock-ttft-ms") or 0) >= 2000 for s in SETTINGS)
    assert any(float(_flag(s, "--mock-itl-ms") or 0) >= 25 for s in SETTINGS)
    assert {"1", "2", "4", "256"} <= {_flag(s, "--max-num-seqs") for s in SETTINGS}
    assert {"0", "1", "5", "64"} <= {_flag(s, "--max-logprobs") for s in SETTINGS}
    assert {"64", "128", "32768"} <= {_flag(s, "--max-model-len") for s in SETTINGS}
    assert len({_flag(s, "--mock-vocab-size") for s in SETTINGS} - {None}) >= 2
    assert any(_flag(s, "--data-parallel-size") == "2" for s in SETTINGS)
    assert any(s.api_key and _flag(s, "--api-key") == s.api_key for s in SETTINGS)
    assert any("--tokens-only" in s.flags for s in SETTINGS)
    assert any(s.busy for s in SETTINGS)


def test_in_flight_settings_span_what_issue_28_asks() -> None:
    """A busy client, a slow reader, no latency at contexts 32/48/64/96, first tokens of 0.8 and
    3 s with one and two slots: the settings that fooled a rule reading the client's pace."""
    unpaced = [s for s in IN_FLIGHT_SETTINGS if not _flag(s, "--mock-ttft-ms")]
    assert all(not _flag(s, "--mock-itl-ms") for s in IN_FLIGHT_SETTINGS)
    assert {"32", "48", "64", "96"} <= {_flag(s, "--max-model-len") for s in unpaced}
    assert any(s.busy for s in unpaced) and any(s.read_delay_s for s in unpaced)
    slow = {(_flag(s, "--mock-ttft-ms"), _flag(s, "--max-num-seqs")) for s in IN_FLIGHT_SETTINGS}
    assert {("800", "1"), ("800", "2"), ("3000", "1"), ("3000", "2")} <= slow
    assert all(s.requirement_ids == IN_FLIGHT for s in IN_FLIGHT_SETTINGS)


def test_every_serve_flag_of_the_document_alone_and_together() -> None:
    """Each flag `tito-api.md` names is some setting's only extra flag, and one setting (per
    generating profile) carries all that apply at once."""
    document = (Path(__file__).parents[1] / "conformance" / "tito-api.md").read_text()
    named = set(re.findall(r"(--[a-z][a-z-]+)", document))
    assert named >= {"--return-sampling-mask", "--enable-return-routed-experts"}
    alone = {s.flags[-1] for s in SETTINGS if len(set(s.flags) - {*MOCK_KNOBS}) == 2}
    profile = {"--enable-scale-out", "--tokens-only", "--api-key"}
    assert named - profile <= alone | {"--api-key"}, named - profile - alone
    together = BY_NAME["every-flag"].flags
    assert {f for f in named if f not in ("--tokens-only", "--skip-tokenizer-init")} <= {
        *together,
        "--enable-scale-out",
    }


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_setting_flags_are_the_mocks(setting: Setting) -> None:
    """Every setting starts a mock that accepts its flags, and claims only what they imply."""
    cfg = parse_args(list(setting.flags), environ=server_env(setting))
    assert ("scale-out" in setting.expect) == (cfg.enable_scale_out and not cfg.tokens_only)
    assert ("tokens-only" in setting.expect) == cfg.tokens_only
    assert ("api-key" in setting.expect) == bool(cfg.api_keys)
    assert ("weight-labels" in setting.expect) == cfg.dev_mode
    assert ("data-parallel" in setting.expect) == (cfg.data_parallel_size > 1)


def test_busy_cores_spin_and_always_stop() -> None:
    with busy_cores(60.0) as pids:
        assert len(pids) == (os.cpu_count() or 1)
        assert all(_alive(pid) for pid in pids)
    assert not any(_alive(pid) for pid in pids)
    with pytest.raises(RuntimeError), busy_cores(60.0) as pids:
        raise RuntimeError("the body failed")
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    """A live, non-zombie process (the busy loop's children are reaped on the way out)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_correct_mock_passes_in_setting(setting: Setting) -> None:
    started = time.monotonic()
    outcome = run_setting(setting)
    summary = outcome.summary
    found = problems(outcome)
    assert outcome.clean, (
        f"{setting.name}: exit {outcome.exit_code}, {summary.get('failed')} fail, "
        f"{summary.get('warnings')} warn, {summary.get('errors')} error in "
        f"{time.monotonic() - started:.1f} s:\n  " + "\n  ".join(found)
    )
    assert summary.get("passed", 0) >= setting.min_passed, (
        f"{setting.name}: only {summary.get('passed')} requirements passed (floor "
        f"{setting.min_passed}); {summary.get('skipped')} skipped, "
        f"{summary.get('skipped_for_limits')} of them for the server's limits: the run was hollow"
    )


CAUGHT_IN = [
    *[
        (name, defect)
        for name in ("in-flight-ctx-48", "in-flight-ttft-800-seqs-2")
        for defect in DEFECTS
    ],
    # behind a slow reader only the engines' word proves an abort or a hang-up reached the
    # request (a non-streamed hang-up there lands on a correct server only now and then)
    ("in-flight-slow-reader", "abort-ignored"),
    ("in-flight-slow-reader", "disconnect-no-abort"),
]
"""Where a correct server's actions land (the settings above), an in-flight defect fails its
requirements: `bench_abort_family.py --defects` runs every setting, ten times."""


@pytest.mark.parametrize(("name", "defect"), sorted(CAUGHT_IN))
def test_in_flight_defects_are_caught_in_setting(name: str, defect: str) -> None:
    row = one_setting(BY_NAME[name], 1, defect)
    assert row["caught"] == 1, "\n".join(row["problems"])
