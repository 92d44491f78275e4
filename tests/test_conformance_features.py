"""The feature probe reads evidence, not the mere presence of a JSON body.

A feature is present when any of its signals is, so a server that shows a feature on one path
and hides it on another fails the hidden path's checks instead of skipping them.
"""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
import respx
from test_conformance_helpers import mock

from conformance.run.runner import run
from conformance.server.features import ABORT, ProbeError, probe
from conformance.verdicts.results import Report, SkipKind, Status
from conformance.wire import Client
from mock_server.harness.testing import running_server


def test_mock_stats_detected_only_from_the_counters() -> None:
    with running_server(["--enable-scale-out"]) as url:
        client = Client(url)
        try:
            assert probe(client).mock_stats
            # Real vLLM answers an unknown route with 404 {"detail": "Not Found"}: a dict, but
            # no counters, so a check that needs /mock/stats must skip there, not fail.
            with respx.mock(assert_all_called=False) as router:
                router.get(f"{url}/mock/stats").mock(
                    return_value=httpx.Response(404, json={"detail": "Not Found"})
                )
                router.route().pass_through()
                assert not probe(client).mock_stats
        finally:
            client.close()


# Claims are dropped in these runs: what must fail must fail from detection alone.
AUTH_IDS = ("AUTH-001", "AUTH-002", "AUTH-003", "AUTH-004", "AUTH-005")
NO_KEY_SKIP = "does not ask for an API key"


def _unclaimed(profile: str, defects: tuple[str, ...], ids: tuple[str, ...]) -> Report:
    with mock(profile, defects) as (_, config):
        return run(replace(config, expect=frozenset(), requirement_ids=frozenset(ids)))


def test_partly_guarded_server_fails_auth() -> None:
    """Generate open, abort and render guarded: AUTH-001 fails, no AUTH check hides as a skip."""
    report = _unclaimed("api-key", ("api-key-generate-open",), AUTH_IDS)
    assert report.result("AUTH-001").status is Status.FAIL, report.result("AUTH-001").reason
    for rid in AUTH_IDS:
        assert NO_KEY_SKIP not in report.result(rid).reason, (rid, report.result(rid).reason)


def test_key_detected_from_any_guarded_prefix() -> None:
    """Without --api-key, a 401 from abort or render (generate open) still shows the key."""
    with mock("api-key", ("api-key-generate-open",)) as (_, config):
        client = Client(config.base_url)
        try:
            features = probe(client)
        finally:
            client.close()
    assert features.api_key_required
    assert f"{ABORT} without a key answered 401" in features.evidence["api-key"]


def test_given_key_means_key_required() -> None:
    """A given --api-key applies to every guarded prefix, even where the server forgot it."""
    with mock("api-key", ("api-key-unchecked",)) as (_, config):
        client = Client(config.base_url, config.api_key)
        try:
            features = probe(client)
        finally:
            client.close()
    assert features.api_key_required
    assert "--api-key was given" in features.evidence["api-key"]


def test_generate_needing_a_key_we_lack_is_a_probe_error() -> None:
    with mock("api-key") as (_, config):
        client = Client(config.base_url)
        try:
            with pytest.raises(ProbeError, match="--api-key"):
                probe(client)
        finally:
            client.close()


def test_tokens_only_without_abort_route_fails_abort() -> None:
    """--tokens-only serves both abort paths: one served means the other's checks apply, and
    the missing route fails the one requirement that owns it (ABORT-001, as on vLLM 0.30/0.31
    --tokens-only); the checks that would each fail on the same 404 are blocked naming it."""
    ids = ("ABORT-001", "ABORT-003", "ABORT-005", "ABORT-006")
    report = _unclaimed("tokens-only", ("abort-route-missing",), ids)
    assert report.result("ABORT-001").status is Status.FAIL, report.result("ABORT-001").reason
    for rid in ids[1:]:
        result = report.result(rid)
        assert result.status is Status.SKIP and result.skip_kind is SkipKind.BLOCKED, rid
        assert result.blocked_by == "ABORT-001" and "answered 404" in result.reason, result


def test_any_signal_shows_a_feature() -> None:
    """One served render route, one dev endpoint, a chat render that tokenizes: all count."""
    with running_server(["--enable-scale-out"], {"VLLM_SERVER_DEV_MODE": "1"}) as url:
        client = Client(url)
        try:
            with respx.mock(assert_all_called=False) as router:
                not_found = httpx.Response(404, json={"detail": "Not Found"})
                for path in ("/v1/completions/render", "/v1/completions/derender"):
                    router.post(f"{url}{path}").mock(return_value=not_found)
                router.get(f"{url}/weight_info").mock(return_value=not_found)
                router.post(f"{url}/inference/v1/generate", json__output_mode="text").mock(
                    return_value=httpx.Response(400, json={"error": {"message": "no text"}})
                )
                router.route().pass_through()
                features = probe(client)
        finally:
            client.close()
    assert features.render and "chat" in features.evidence["render"]
    assert features.dev_mode and "update_weight_version" in features.evidence["weight-labels"]
    assert features.tokenizer and "tokenized messages" in features.evidence["text-mode"]
    assert {"render", "weight-labels", "text-mode"} <= set(features.names())


@pytest.mark.parametrize(
    ("features", "claims", "name", "anchor"),
    [
        # a scale-out server whose generate is missing: every feature's root is GEN-003
        ({"generate": "disabled"}, {"scale-out", "abort"}, "abort", "GEN-003"),
        ({"generate": "disabled"}, {"tokens-only", "abort"}, "abort", "TOKONLY-001"),
        ({"generate": "enabled"}, {"scale-out", "abort"}, "abort", "ABORT-001"),
        # text mode missing because the echo is: the echo's requirement, not TEXT-001
        ({"generate": "enabled", "tokenizer": True}, {"text-mode"}, "text-mode", "TEXT-005"),
        ({"generate": "enabled"}, {"text-mode"}, "text-mode", "TEXT-001"),
        ({"generate": "enabled"}, {"mock-stats"}, "mock-stats", None),
    ],
)
def test_a_claimed_absent_feature_fails_its_root(
    features: dict[str, object], claims: set[str], name: str, anchor: str | None
) -> None:
    """The requirement a claimed-but-absent feature fails; the collector blocks the rest."""
    from conformance.server.features import Features

    assert Features(**features).anchor(name, frozenset(claims)) == anchor  # type: ignore[arg-type]
