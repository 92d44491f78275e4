"""The server profiles: the one place their flags, environment, API key and claims are spelled.

A profile says how a TITO server is started (which endpoints it serves, whether it wants a key,
whether dev mode is on, how many data-parallel ranks it runs) and what the suite is told it
supports. Its `flags` are the same for `tito-mock` and for `vllm serve`; what a run adds is its
own: the embedded mock adds `MOCK_KNOBS`, the live run (`live.profiles`) the model and its
backend's fixed flags. Tests read these profiles; they do not copy the flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

API_KEY = "tito-conformance-key"
MOCK_KNOBS = ("--mock-itl-ms", "1")
"""Mock-only flags of the embedded mock run: a 1 ms inter-token latency keeps a long request in
flight long enough to be aborted (vLLM has its own pace and no such flag)."""
DEV_MODE_VAR = "VLLM_SERVER_DEV_MODE"
"""Set to "1", it makes vLLM (and the mock) serve the dev endpoints, weight labels among them."""

SPEC_PROFILE_FLAGS: dict[str, tuple[str, ...]] = {
    "scale-out": ("--enable-scale-out",),
    "tokens-only": ("--tokens-only",),
    "disabled": (),
}
"""The flags that select each column of the spec's `x-tito-profiles`."""


@dataclass(frozen=True)
class Profile:
    """One way to start a server, and the features the suite is told it has."""

    name: str
    spec_profile: str  # the `x-tito-profiles` column it answers by: a SPEC_PROFILE_FLAGS key
    claims: frozenset[str]
    api_key: str | None = None
    dev_mode: bool = False
    data_parallel: int = 1

    def __post_init__(self) -> None:
        if self.spec_profile not in SPEC_PROFILE_FLAGS:
            raise ValueError(f"{self.name}: unknown spec profile {self.spec_profile!r}")

    @property
    def flags(self) -> tuple[str, ...]:
        """The server's command-line flags, for the mock and for vLLM alike."""
        flags = SPEC_PROFILE_FLAGS[self.spec_profile]
        if self.data_parallel > 1:
            flags += ("--data-parallel-size", str(self.data_parallel))
        if self.api_key is not None:
            flags += ("--api-key", self.api_key)
        return flags

    @property
    def env(self) -> dict[str, str]:
        """The server's environment on top of the backend's (a fresh dict each time)."""
        return {DEV_MODE_VAR: "1"} if self.dev_mode else {}

    @property
    def features(self) -> frozenset[str]:
        """What a correct server started this way offers: its claims, and the weight-label
        endpoints dev mode adds (a run detects those; the suite is not told)."""
        return self.claims | ({"weight-labels"} if self.dev_mode else frozenset())

    @property
    def gpu_only(self) -> bool:
        """vLLM runs data parallel on GPUs only (the mock does not care)."""
        return self.data_parallel > 1


ALL_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        # Dev mode on scale-out, so the weight-label endpoints can be checked too.
        Profile(
            "scale-out",
            "scale-out",
            frozenset({"scale-out", "abort", "text-mode", "render"}),
            dev_mode=True,
        ),
        Profile("tokens-only", "tokens-only", frozenset({"tokens-only", "abort", "legacy-abort"})),
        Profile("disabled", "disabled", frozenset({"disabled"})),
        Profile(
            "api-key", "scale-out", frozenset({"scale-out", "api-key", "abort"}), api_key=API_KEY
        ),
        Profile(
            "tokens-only-api-key",
            "tokens-only",
            frozenset({"tokens-only", "api-key", "legacy-abort"}),
            api_key=API_KEY,
        ),
        Profile("dp", "scale-out", frozenset({"scale-out", "data-parallel"}), data_parallel=2),
    )
}
"""Every profile, by name; a name is a contract (CLI choices, report fields)."""
PROFILES: dict[str, Profile] = {n: p for n, p in ALL_PROFILES.items() if not p.gpu_only}
"""The embedded-mock run's profiles (`tito-conformance run --profile`): all but the GPU-only
one, dp, which is there for multi-GPU live runners."""
MAIN_PROFILES = ("scale-out", "tokens-only", "disabled", "api-key")
"""The profiles a run covers when none is named."""


def profiles_with(*features: str, among: Mapping[str, Profile] | None = None) -> frozenset[str]:
    """The names of the profiles (of the embedded run's, unless `among` says) offering every
    one of `features`: how the diff, the fuzzer and the benchmarks pick profiles, so none of
    them spells a profile list of its own."""
    pool = PROFILES if among is None else among
    return frozenset(n for n, p in pool.items() if set(features) <= p.features)
