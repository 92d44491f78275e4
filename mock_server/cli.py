"""`tito-mock`: run the mock under uvicorn."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from mock_server.config import parse_args

    config = parse_args(argv)
    import uvicorn

    from mock_server.app import create_app

    app = create_app(config)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
    )

    def fatal() -> None:
        server.should_exit = True

    app.state.mock.on_fatal.append(fatal)
    server.run()
    return 1 if app.state.mock.engine.dead else 0


if __name__ == "__main__":
    sys.exit(main())
