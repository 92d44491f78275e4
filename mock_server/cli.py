"""`tito-mock`: run the mock under uvicorn, or (`--engines N`) a fleet of them behind a router."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from loopback.timeouts import SHUTDOWN_GRACE_S, SIGNAL_SLICE_S

FLEET_FLAGS = ("--engines", "--router", "--router-defect", "--engine-api-key")
REAL_FRONTEND = "--real-frontend"
"""vLLM's own server over a simulated core: the kit's live part answers it (an entry point of
`tito_mock.commands`, so the mock never imports it)."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a.split("=", 1)[0] in FLEET_FLAGS for a in args):
        return fleet_main(args)
    if any(a.split("=", 1)[0] == REAL_FRONTEND for a in args):
        return real_frontend_main(args)
    from mock_server.behaviour.config import parse_args

    config = parse_args(args)
    import uvicorn

    from mock_server.serve.app import create_app

    app = create_app(config)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    )

    def fatal() -> None:
        server.should_exit = True

    app.state.mock.on_fatal.append(fatal)
    server.run()
    return 1 if app.state.mock.engine.dead else 0


def real_frontend_main(args: list[str]) -> int:
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="tito_mock.commands") if ep.name == "real-frontend"]
    if not found:
        print("tito-mock: --real-frontend needs the kit's live part installed", file=sys.stderr)
        return 2
    command: Callable[[list[str]], int] = found[0].load()
    return command(args)


def _fleet_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tito-mock --engines N",
        description="N mock engines (every other flag is theirs) behind one router.",
        allow_abbrev=False,
    )
    p.add_argument("--engines", type=int, default=2, help="how many engines (default 2)")
    p.add_argument(
        "--router",
        choices=("auto", "kit", "vllm-router"),
        default="auto",
        help="vllm-router ($TITO_VLLM_ROUTER or on PATH) when found (auto), or the kit's own",
    )
    p.add_argument(
        "--router-defect", metavar="NAME", help="break one duty of the kit's router ('list')"
    )
    p.add_argument("--engine-api-key", help="the key the kit's router sends (key-bypassed)")
    p.add_argument("--host", default="127.0.0.1", help="the router's host")
    p.add_argument("--port", type=int, default=8000, help="the router's port")
    return p


def fleet_main(argv: list[str]) -> int:
    """Start the fleet, print the router's URL and the engines', serve until Ctrl-C."""
    import signal
    import threading

    from mock_server.harness.fleet import start_fleet
    from mock_server.router import catalogue_text

    ns, engine_flags = _fleet_parser().parse_known_args(argv)
    if ns.router_defect == "list":
        print(catalogue_text())
        return 0
    try:
        fleet = start_fleet(
            ns.engines,
            engine_flags,
            router=ns.router,
            router_defect=ns.router_defect,
            engine_api_key=ns.engine_api_key,
            host=ns.host,
            port=ns.port,
        )
    except (ValueError, RuntimeError) as exc:  # FleetError, or a port the router cannot bind
        print(f"tito-mock: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with fleet:
        print(f"router ({fleet.router}): {fleet.url}")
        for i, url in enumerate(fleet.engines):
            print(f"engine {i}: {url}")
        sys.stdout.flush()
        try:
            while not stop.wait(SIGNAL_SLICE_S):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
