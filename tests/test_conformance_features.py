"""The feature probe reads evidence, not the mere presence of a JSON body."""

from __future__ import annotations

import httpx
import respx

from conformance.features import probe
from conformance.http import Client
from mock_server.testing import running_server


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
