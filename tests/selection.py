"""What the README's test command (`tox -e py`) leaves to CI's other environments, and why.

The fast command runs every test module; from a test that repeats one run over a matrix
(settings, defects, fuzz budgets) it keeps one representative case (`keep`) and leaves the rest
to the tox environment named after what they hold, which `.ci/run` runs, so CI still runs
everything. One table, read by `tests/conftest.py` (which marks the items: the environment's
name is the marker) and by `tests/test_fast_selection.py` (which proves the fast selection
still imports every module of the kit).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Moved:
    """Test `function` of `module` (every case but those in `keep`) runs in tox env `env`."""

    module: str
    function: str
    env: str
    keep: tuple[str, ...] = ()
    """Parametrize ids that stay in the fast command: the representative case."""


ENVS: dict[str, str] = {
    "settings": "the correct mock in every setting of benchmarks/bench_settings.py, and the "
    "in-flight defects caught in the settings where a correct server's actions land; the "
    "correct mock under load in every profile",
    "sweeps": "one whole-suite (or whole-fuzz) run per defect or budget: the blast radius, "
    "the router defects with and without the fuzz folded in, the fuzzer's defects, the CI "
    "fuzz budget in every profile, side-by-side sessions, a hostile server's endless stream, "
    "issue 38's hostile servers in bounded time and memory, a load run per defect that shows "
    "only under load",
    "standin": "the GPU path and the release runs end to end against the stand-in vllm",
}
"""Marker (and tox environment) -> what it holds."""

MOVED: tuple[Moved, ...] = (
    Moved("test_conformance_settings.py", "test_correct_mock_passes_in_setting", "settings",
          keep=("every-flag",)),
    Moved("test_conformance_settings.py", "test_in_flight_defects_are_caught_in_setting",
          "settings", keep=("in-flight-ctx-48-disconnect-no-abort",)),
    Moved("test_conformance_blast_radius.py", "test_blast_radius", "sweeps",
          keep=("garbage-json",)),
    # the median of every defect's radius: needs the whole catalogue's runs
    Moved("test_conformance_blast_radius.py", "test_median_blast_radius", "sweeps"),
    Moved("test_conformance_router.py", "test_a_router_defect_fails_its_duty_and_is_the_routers",
          "sweeps", keep=("key-dropped",)),
    Moved("test_router_blast.py", "test_a_router_defect_fails_its_duty_with_the_fuzz_folded_in",
          "sweeps", keep=("error-502",)),
    Moved("test_fuzz_defects.py", "test_fuzzer_finds_defect", "sweeps",
          keep=("stream-bad-framing",)),
    Moved("test_fuzz_defects.py", "test_sequences_find_defect", "sweeps",
          keep=("abort-finish-reason-length",)),
    # disabled: the profile that draws least alone (each pays for its own draws in `py`)
    Moved("test_fuzz_mock.py", "test_correct_mock_ci_budget", "sweeps", keep=("disabled",)),
    # the endless stream runs a client to its budget: ~50 s of the fast command alone
    Moved("test_conformance_hostile.py", "test_hostile_server_yields_readable_failures", "sweeps",
          keep=("early-close", "hang", "garbage", "endless-body")),
    # issue 38's hostile servers, each a whole `tito-conformance run` (fuzz folded in) in a
    # process of its own, 10-90 s each: the deep JSON (seconds) stays, the rest are sweeps
    Moved("test_conformance_hostile.py",
          "test_a_hostile_server_is_a_readable_failure_in_bounded_time_and_memory", "sweeps",
          keep=("deep-json",)),
    Moved("test_conformance_parallel.py", "test_side_by_side_gives_the_verdicts_of_one_session",
          "sweeps", keep=("defect-checked-alone",)),
    # one load run per defect that shows only under load (~15-45 s each)
    Moved("test_load_defects.py", "test_load_catches_a_defect_run_does_not_see", "sweeps",
          keep=("usage-n-first-choice-busy",)),
    Moved("test_load_defects.py", "test_load_also_judges_hang_ups", "sweeps"),
    Moved("test_load_defects.py", "test_a_correct_mock_under_load_violates_nothing_in",
          "settings", keep=("dp",)),
    Moved("test_live_gpu_standin.py", "test_the_gpu_path_end_to_end_with_dp", "standin"),
    Moved("test_live_releases.py", "test_two_releases_end_to_end_with_the_standin", "standin"),
    Moved("test_live_gpu_standin.py", "test_the_gpu_path_loads_each_profile_after_its_suite",
          "standin"),
    # the load in every setting: routers, --max-num-seqs, a busy client (about 80 s in all)
    Moved("test_load_settings.py",
          "test_a_correct_fleet_under_load_violates_only_what_its_router_is_listed_for",
          "settings"),
    Moved("test_load_settings.py",
          "test_a_correct_mock_under_load_violates_nothing_at_any_max_num_seqs", "settings"),
    Moved("test_load_settings.py",
          "test_a_correct_mock_under_load_violates_nothing_on_a_busy_client", "settings"),
)  # fmt: skip

BY_TEST: dict[tuple[str, str], Moved] = {(m.module, m.function): m for m in MOVED}


def env_of(module: str, function: str, case: str | None) -> str | None:
    """The environment a test case runs in, None for the fast command."""
    moved = BY_TEST.get((module, function))
    if moved is None or (case is not None and case in moved.keep):
        return None
    return moved.env


FAST = "not (" + " or ".join(ENVS) + ")"
"""The fast command's `-m` expression (tox.ini's `py`)."""
