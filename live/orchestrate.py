"""The live run: one server at a time, per profile start -> suite [-> diff] [-> fuzz] -> stop,
then the gate."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from conformance.reporting import json_report, terminal
from conformance.reporting.progress import Progress
from conformance.run.runner import report_from
from conformance.session import SuiteConfig
from conformance.verdicts.results import Report
from conformance.wire import Timeouts
from loopback.ports import free_port

from . import deviations, fuzz_gate, load_phase
from . import releases as releases_mod
from .artifacts import write_json
from .fidelity import DiffResult, diff_against_mock
from .fuzzing import FuzzBudget, fuzz_server, vocab_size
from .launcher import LiveServer, ServerStartError, install_signal_handlers
from .profiles import Backend, LiveProfile, wants_diff
from .side_by_side import run_side_by_side
from .suite import LiveRun, run_suite, write_transcripts

STANDIN_NOTE = (
    "vllm stand-in: the mock behind `vllm serve` (live/standin), not vLLM; "
    "no known deviation applies"
)


def run_profile(
    backend: Backend,
    profile: LiveProfile,
    args: argparse.Namespace,
    diffs: list[DiffResult],
    fuzzing: Fuzzing | None = None,
    loading: load_phase.Loading | None = None,
) -> LiveRun:
    """Suite, then (optionally) the mock diff, the load and the fuzzer, on one server start (the
    fuzzer last: its out-of-vocabulary group may kill a tokens-only server)."""
    out: Path = args.out
    server = live_server(backend, profile, args, out / f"server-{profile.name}.log")
    config = suite_config(profile, args, server.base_url)
    t0 = time.monotonic()
    progress = Progress(f"   [{profile.name}] ")
    try:
        progress.update("starting the server")
        with server:
            run = run_suite(server, config)
            if wants_diff(args, profile):
                if not server.alive:
                    server.restart()
                progress.update("mock-vs-real diff")
                t1 = time.monotonic()
                version = run.report.server.version
                diffs.append(
                    diff_against_mock(
                        server, profile, out, vllm_version=version, request_timeout_s=args.timeout
                    )
                )
                run.timings["diff_s"] = round(time.monotonic() - t1, 2)
            if loading is not None:
                if not server.stays_healthy():  # the suite's last check may just have killed it
                    server.restart()
                progress.update(f"load, {loading.seconds:g} s of {loading.concurrency} users")
                t1 = time.monotonic()
                loading.run(server.base_url, profile.api_key, run.report)
                run.timings["load_s"] = round(time.monotonic() - t1, 2)
            if fuzzing is not None:
                if not server.alive:
                    server.restart()
                progress.update(f"fuzzing, {fuzzing.budget.max_examples} cases per operation")
                t1 = time.monotonic()
                fuzzing.verdicts.append(fuzzing.run(server, profile, run.report))
                run.timings["fuzz_s"] = round(time.monotonic() - t1, 2)
    except ServerStartError as exc:
        report: Report = report_from(config, None, [])
        report.harness_error = f"server did not start: {exc}"
        run = LiveRun(profile.name, report)
    finally:
        progress.clear()
    run.duration_s = round(time.monotonic() - t0, 2)
    run.report.server.build = backend.build
    run.timings |= {
        "start_s": server.timings.starts_s,
        "warmup_s": server.timings.warmup_s,
        "reniced_threads": server.timings.reniced_threads,
        "suite_s": run.report.duration_s,
        "profile_total_s": run.duration_s,
        "restarts": server.restarts,
    }
    return run


def live_server(
    backend: Backend, profile: LiveProfile, args: argparse.Namespace, log: Path
) -> LiveServer:
    """One server of `backend` in `profile` on a free port, not started yet."""
    port = free_port()
    return LiveServer(
        backend.argv(profile, port),
        port,
        env=backend.env(profile),
        start_deadline_s=args.start_deadline,
        renice_engine=backend.renice_engine,
        api_key=profile.api_key,
        log_path=log,
    )


def suite_config(
    profile: LiveProfile, args: argparse.Namespace, base_url: str, engines: tuple[str, ...] = ()
) -> SuiteConfig:
    """The suite's configuration for a live server (or a router over `engines`)."""
    return SuiteConfig(
        base_url=base_url,
        api_key=profile.api_key,
        expect=profile.claims,
        timeout=args.timeout,
        stream_deadline=Timeouts(args.timeout, stream=args.stream_deadline).stream,
        deadline_s=args.deadline or 0.0,
        profile=profile.name,
        # One session, as the known deviations were recorded (`run --workers` side by side
        # against a real vLLM on two CPU cores is untried in CI).
        workers=1,
        engines=engines,
    )


@dataclass
class Fuzzing:
    """The fuzz step of every profile: budget, deviations table, artifacts, verdicts."""

    table: dict[str, list[deviations.Deviation]]
    out: Path
    budget: FuzzBudget
    vocab: int | None
    verdicts: list[fuzz_gate.FuzzVerdict] = field(default_factory=list)

    def run(
        self, server: LiveServer, profile: LiveProfile, report: Report
    ) -> fuzz_gate.FuzzVerdict:
        """Fuzz `server`, whose suite run gave `report` (its version, what its probe learned)."""
        listed = deviations.for_version(self.table, report.server.version)
        return fuzz_server(server, profile, listed, report, self.out, self.budget, self.vocab)


def run_all(
    backend: Backend,
    profiles: list[LiveProfile],
    args: argparse.Namespace,
    expect_version: str | None = None,
) -> int:
    """Every profile on `backend`, then the gate; `expect_version`: the release that must
    answer (a release environment that starts another vLLM would be judged by the wrong list)."""
    install_signal_handlers()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    # The list is about vLLM: the mock (the unit tests' backend, or behind the `vllm` stand-in)
    # must pass outright, with no deviation expected or demanded.
    if args.deviations is None and (backend.kind == "mock" or backend.standin):
        table: dict[str, list[deviations.Deviation]] = {}
    else:
        table = deviations.load(args.deviations or deviations.DEFAULT_FILE)
    t0 = time.monotonic()
    verdicts: list[deviations.Verdict] = []
    timings: dict[str, object] = {}
    diffs: list[DiffResult] = []
    fuzzing = None
    if args.fuzz:
        budget = FuzzBudget(args.fuzz_examples, args.fuzz_seed, args.timeout)
        fuzzing = Fuzzing(table, out, budget, vocab_size(backend.model))
    loading = None
    if args.load:
        loading = load_phase.Loading(args.load, table, out, args.timeout, args.load_concurrency)
    for profile in profiles:
        print(f"== live [{backend.kind}] profile {profile.name}", flush=True)
        run = run_profile(backend, profile, args, diffs, fuzzing, loading)
        timings[profile.name] = run.timings
        json_report.write([run.report], out / f"report-{profile.name}.json")
        write_transcripts(run, out / f"transcripts-{profile.name}.jsonl")
        print(terminal.render([run.report], verbose=args.verbose), flush=True)
        for death in run.deaths:
            state = (
                "restarted"
                if death.restarted
                else f"restart FAILED: {death.restart_error}"
                if death.restart_error
                else "no check ran after it, not restarted"
            )
            print(f"server died during {death.check} (exit {death.returncode}); {state}")
            print("  log tail:\n    " + death.log_tail[-2000:].replace("\n", "\n    "))
        listed = deviations.for_version(table, run.report.server.version)
        verdict = deviations.judge(run.report, listed)
        said = run.report.server.version
        if expect_version is not None and said != expect_version and not verdict.harness_error:
            verdict.harness_error = f"asked for vLLM {expect_version}, the server says {said}"
        verdicts.append(verdict)
        print(f"   {profile.name}: {timings[profile.name]}", flush=True)
    gate = deviations.render(verdicts)
    if backend.standin:
        gate = f"{STANDIN_NOTE} ({backend.vllm})\n{gate}"
    if fuzzing is not None:
        gate += "\n" + fuzz_gate.render(fuzzing.verdicts)
    if loading is not None:
        gate += "\n" + load_phase.render(loading.verdicts)
    for d in diffs:
        gate += f"\nfidelity diff [{d.profile}] mock vs real: {d.status} ({d.output_path.name})"
    print(gate)
    (out / "gate.txt").write_text(gate + "\n", encoding="utf-8")
    timings["total_s"] = round(time.monotonic() - t0, 2)
    write_json(out / "timings.json", timings)
    fuzzed_ok = fuzzing is None or all(v.ok for v in fuzzing.verdicts)
    loaded_ok = loading is None or all(v.ok for v in loading.verdicts)
    ok = all(v.ok for v in verdicts) and all(d.ok for d in diffs) and fuzzed_ok and loaded_ok
    names = ", ".join(p.name for p in profiles)
    print(
        f"== live [{backend.kind}] overall ({len(profiles)} profiles: {names}): "
        f"{'PASSED' if ok else 'FAILED'} in {timings['total_s']} s; artifacts in {out}"
    )
    return 0 if ok else 1


def install(kind: str, spec: str, root: Path, out: Path) -> releases_mod.Release:
    """One release's environment: the backend's install script, or (frontend) the wheel with
    `--no-deps` over CPU torch (`live/frontend/install.py`)."""
    log = out / f"install-{releases_mod.version_of(spec)}.log"
    if kind == "frontend":
        from .frontend import install as frontend

        return frontend.ensure(spec, root, log)
    return releases_mod.ensure(kind, spec, root, log)


def run_release(
    backend: Backend, profiles: list[LiveProfile], args: argparse.Namespace, version: str
) -> int:
    """One release's whole run, held to the version it must answer as."""
    return run_all(backend, profiles, args, expect_version=version)


def run_releases(
    args: argparse.Namespace,
    versions: list[str],
    profiles: list[LiveProfile],
    backend_from: Callable[[argparse.Namespace], Backend],
) -> int:
    """Each release in its own environment, one after another (or `--releases-at-once` side
    by side, `live.side_by_side`); per release the whole live run in OUT/vllm-V/, then the
    release matrix of all their reports in OUT/matrix.html and .md."""
    from conformance.reporting.matrix_cli import run as render_matrix

    from . import releases

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    root = args.venvs or releases.default_root()
    t0 = time.monotonic()
    timings: dict[str, object] = {}
    try:
        installed = [install(args.backend, v, root, out) for v in versions]
        if args.backend in ("cpu", "frontend") and args.model is None:
            args.model = releases.build_model(installed[0].python)
            print(f"tiny model: {args.model}", flush=True)
    except releases.ReleaseInstallError as exc:
        print(f"tito-conformance live: {exc} (logs in {out})", flush=True)
        return 1
    timings["install_s"] = round(time.monotonic() - t0, 2)
    codes: dict[str, int] = {}
    jobs = [
        (
            release.version,
            replace(backend_from(args), python=release.python, vllm=release.vllm),
            argparse.Namespace(**{**vars(args), "out": out / f"vllm-{release.version}"}),
        )
        for release in installed
    ]
    at_once = min(args.releases_at_once, len(jobs))
    if at_once > 1:
        ended, seconds = run_side_by_side(jobs, profiles, run_release, at_once)
        codes = {version: ended[version] for version, _, _ in jobs}  # the order asked for
        timings.update((version, seconds[version]) for version, _, _ in jobs)
    else:
        for (version, backend, sub), release in zip(jobs, installed, strict=True):
            print(f"=== vLLM {version} ({release.venv})", flush=True)
            t1 = time.monotonic()
            codes[version] = run_release(backend, profiles, sub, version)
            timings[version] = round(time.monotonic() - t1, 2)
    reports = sorted(out.glob("vllm-*/report-*.json"))
    if reports:
        matrix = argparse.Namespace(
            reports=reports,
            html=out / "matrix.html",
            markdown=out / "matrix.md",
            badge=None,
            drift=None,
        )
        render_matrix(matrix)
    timings["total_s"] = round(time.monotonic() - t0, 2)
    write_json(out / "timings.json", timings)
    lines = [f"vLLM {v}: {'PASSED' if c == 0 else 'FAILED'}" for v, c in codes.items()]
    gate = "\n".join(lines)
    (out / "gate.txt").write_text(gate + "\n", encoding="utf-8")
    print(f"== releases ({timings['total_s']} s):\n{gate}\nartifacts in {out}", flush=True)
    return 0 if all(c == 0 for c in codes.values()) else 1
