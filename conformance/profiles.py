"""The server profiles the embedded mock runs in, and what each claims.

These are the profiles of the live backend too (scale-out, tokens-only, disabled, api-key); the
embedded mock adds its own knobs: a 1 ms inter-token latency so a long request stays in flight
long enough to be aborted, and dev mode on scale-out so weight labels can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

API_KEY = "tito-conformance-key"
MOCK_KNOBS = ("--mock-itl-ms", "1")


@dataclass(frozen=True)
class Profile:
    name: str
    flags: tuple[str, ...]
    claims: frozenset[str]
    api_key: str | None = None
    env: dict[str, str] = field(default_factory=dict)


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "scale-out",
            ("--enable-scale-out",),
            frozenset({"scale-out", "abort", "text-mode", "render"}),
            env={"VLLM_SERVER_DEV_MODE": "1"},
        ),
        Profile(
            "tokens-only",
            ("--tokens-only",),
            frozenset({"tokens-only", "abort", "legacy-abort"}),
        ),
        Profile("disabled", (), frozenset({"disabled"})),
        Profile(
            "api-key",
            ("--enable-scale-out", "--api-key", API_KEY),
            frozenset({"scale-out", "api-key", "abort"}),
            api_key=API_KEY,
        ),
        Profile(
            "tokens-only-api-key",
            ("--tokens-only", "--api-key", API_KEY),
            frozenset({"tokens-only", "api-key", "legacy-abort"}),
            api_key=API_KEY,
        ),
    )
}
MAIN_PROFILES = ("scale-out", "tokens-only", "disabled", "api-key")
