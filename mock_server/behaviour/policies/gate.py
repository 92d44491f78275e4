"""Gate-stage policies: which routes exist, which need the API key, what a disabled server
answers before looking at the request."""

from dataclasses import replace

from mock_server.behaviour.policies.registry import policy, setting
from mock_server.behaviour.policies.slots import Gate


def _guard(name: str, path: str, guarded: bool) -> None:
    """Register `name` as the policy that (un)guards `path` whatever its prefix."""

    def bend(slot: Gate) -> Gate:
        return replace(slot, guarded=(*slot.guarded, (path, guarded)))

    bend.__name__ = bend.__qualname__ = name.replace("-", "_")
    policy(name, "gate")(bend)


_guard("health-guarded", "/health", True)
_guard("abort-no-auth", "/inference/v1/abort_requests", False)
_guard("legacy-abort-requires-key", "/abort_requests", True)
_guard("api-key-generate-open", "/inference/v1/generate", False)  # abort, render still guarded
setting("api-key-unchecked", "gate", api_key_checked=False)
setting("abort-route-missing", "gate", abort_route=False)
setting("render-missing", "gate", render_routes=False)
setting("legacy-abort-everywhere", "gate", legacy_abort_everywhere=True)
setting("scale-out-generate-404", "gate", generate_404=True)
setting("tokens-only-generate-403", "gate", tokens_only_generate_disabled=True)
setting("disabled-validates-first", "gate", disabled_validates_first=True)
setting("hang-generate", "gate", hang_generate=True)
setting("disabled-abort-open", "gate", disabled_abort_open=True)
