"""`tito-conformance load`: the suite's rules over every answer of a rollout-shaped load.

`main` (the entry point `tito-conformance load` delegates to) parses the arguments, then runs
`python -m conformance.load` with them: Locust must be imported before anything imports httpx,
and `tito-conformance` itself already has. `run` is that process's body: a worker, or the
master that probes, runs the swarm and writes the reports.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.options import add_api_key, add_reports, add_timeout


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tito-conformance load",
        description="Drive a server with a rollout-shaped load and judge every answer by the "
        "suite's rules. Exit 0 when no MUST requirement was violated, 1 when one was, 2 on a "
        "usage or harness error, 3 when nothing failed but a verdict stayed inconclusive.",
    )
    p.add_argument("--base-url", help="server under test (a router, or one engine)")
    p.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="URL",
        help="an engine behind --base-url, reachable directly (its state proves aborts)",
    )
    add_api_key(p)
    add_timeout(p)
    add_reports(p)
    p.add_argument("--concurrency", type=int, default=16, help="users (rollout clients) at once")
    p.add_argument("--duration", type=float, metavar="S", help="seconds of load (default 10)")
    p.add_argument("--requests", type=int, metavar="K", help="stop after K requests in all")
    p.add_argument(
        "--workload",
        type=Path,
        metavar="FILE",
        help="a TOML file laid over the default mix (conformance/load/workload.toml)",
    )
    p.add_argument("--html", type=Path, metavar="PATH", help="an HTML page with the plots")
    p.add_argument("--workers", type=int, default=1, help="worker processes here (default 1)")
    p.add_argument(
        "--master",
        action="store_true",
        help="start no worker here: wait for --expect-workers started with --worker elsewhere",
    )
    p.add_argument("--expect-workers", type=int, default=1, metavar="N")
    p.add_argument("--master-bind-host", default="127.0.0.1", metavar="HOST")
    p.add_argument("--master-port", type=int, default=0, metavar="PORT", help="default: a free one")
    p.add_argument("--worker", action="store_true", help="be a worker of a master")
    p.add_argument("--master-host", default="127.0.0.1", metavar="HOST")
    p.add_argument("--name", default="", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The entry point: check the arguments, then run them where Locust comes first."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser().parse_args(args)  # usage errors and --help here
    return subprocess.call([sys.executable, "-m", "conformance.load", *args])


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    api_key = args.api_key or os.environ.get("TITO_API_KEY")
    if args.worker:
        from conformance.load.swarm import run_worker

        if not args.master_port:
            print("tito-conformance load: error: --worker needs --master-port", file=sys.stderr)
            return 2
        return run_worker(args.master_host, args.master_port, api_key, args.name)
    if not args.base_url:
        print("tito-conformance load: error: --base-url is required", file=sys.stderr)
        return 2
    if args.concurrency < 1 or args.workers < 1:
        print("tito-conformance load: error: --concurrency and --workers are >= 1", file=sys.stderr)
        return 2
    try:
        return _master(args, api_key)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"tito-conformance load: error: {exc}", file=sys.stderr)
        return 2


def _master(args: argparse.Namespace, api_key: str | None) -> int:
    import secrets

    from conformance.load import mix, outcome
    from conformance.load.cycles import Cycles, initial_label, serves_pause
    from conformance.load.live import Live
    from conformance.load.swarm import Settings, run_master
    from conformance.session import Session, SuiteConfig

    workload = mix.read(args.workload)
    config = SuiteConfig(
        base_url=args.base_url, api_key=api_key, timeout=args.timeout, engines=tuple(args.engine)
    )
    session = Session.open(config)  # the one probe, as `run` makes it
    features, limits = session.features, session.limits
    if features.generate != "enabled":
        session.close()
        raise RuntimeError(f"the server does not serve generate ({features.generate})")
    label = initial_label(session.client) if features.dev_mode else "default"
    pause = features.dev_mode and serves_pause(session.client)
    facts = mix.Facts(
        dev_mode=features.dev_mode,
        abort=features.abort,
        legacy_abort=features.legacy_abort,
        dp_size=features.dp_size,
        max_model_len=limits.max_model_len,
        max_n=limits.max_n,
        max_logprobs=limits.max_logprobs,
        ttft_s=limits.ttft_s,
        itl_s=limits.itl_s,
        pause=pause,
        label=label,
        engine_state=features.engine_state,
    )
    run_id = secrets.token_hex(3)
    prefix = f"tito-load-{run_id}-"
    duration = args.duration if args.duration or args.requests else 10.0
    plan: dict[str, Any] = {
        "base_url": args.base_url,
        "timeout": args.timeout,
        "facts": facts.as_dict(),
        "workload": workload,
        "label_prefix": prefix,
        # the engines' state, read at each engine (a lone server: its own)
        "engines": list(features.engines or args.engine) or [args.base_url],
    }
    every = float(workload["cycles"]["every_s"])
    cycles = None
    if features.dev_mode and every > 0:
        cycles = Cycles(
            session.client,
            every,
            str(workload["cycles"]["pause_mode"]),
            prefix,
            pause,
            lambda kind, data: None,
            0.0,
        )
    workers = args.expect_workers if args.master else args.workers
    settings = Settings(
        plan,
        args.concurrency,
        duration,
        args.requests,
        workers,
        local=not args.master,
        bind_host="*"
        if args.master and args.master_bind_host == "0.0.0.0"
        else args.master_bind_host,
        port=args.master_port,
        api_key=api_key,
        cycles=cycles,
    )
    before = outcome.machine()
    live = Live()
    try:
        result = run_master(settings, live.update)
    finally:
        live.clear()
        session.close()
    if not result.tally.total("requests"):
        result.errors.append("no request of the run ended: nothing was judged")
    data = outcome.build(
        result.tally,
        base_url=args.base_url,
        engines=list(features.engines),
        features=features.names(),
        limits={k: v for k, v in limits.__dict__.items() if k != "evidence"},
        version=features.version,
        config={
            "concurrency": args.concurrency,
            "duration_s": duration,
            "requests": args.requests,
            "workers": workers,
            "workload": workload,
            "pause_cycles": pause,
            "label_cycles": cycles is not None,
        },
        duration_s=result.duration_s,
        marks=result.marks,
        workers=result.workers,
        errors=result.errors,
        locust_figures=result.locust,
        loadavg={"before": before, "after": outcome.machine()},
    )
    print(live.summary(data))
    if args.json_report:
        outcome.write(data, args.json_report)
    if args.junit_xml:
        from conformance.reporting import junit

        junit.write([outcome.report_of(data)], args.junit_xml)
    if args.html:
        from conformance.load import plots

        plots.write(data, args.html)
    return int(data["exit_code"])
