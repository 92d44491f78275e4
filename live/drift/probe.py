"""Run a request corpus through one vLLM release's own app: `python probe.py CORPUS OUT -- ARGS`.

Run by the release's interpreter, by path (its environment does not have the kit). Request
models alone would miss what a handler checks by hand (abort's `request_ids` before 0.34) and
what the input processor checks before the engine (0.34's `prompt_logprob_start` against the
prompt length), and would guess the status, message and `param` the server gives. So this
starts the release's API server as `live/frontend/serve.py` does (the simulated engine core:
no engine, no GPU), but swaps `serve_http` for a loop that sends each request to the app in
process (`httpx.ASGITransport`, no socket is served), and writes per request its status and,
for an error, the release's own message, type and param as JSON to OUT.
"""

from __future__ import annotations

import asyncio
import json
import runpy
import sys
import time
from pathlib import Path
from typing import Any

ENTRY = "vllm.entrypoints.openai.api_server"
SERVING = "vllm.entrypoints.launchers.api_server.entry"
CASE_DEADLINE_S = 120.0
PROBE_FAILED = 4


def outcome(status: int | None, body: Any) -> dict[str, Any]:
    """Status and, for an error, its message/type/param (vLLM's ErrorResponse or `detail`);
    a stream's error event counts though its status is 200."""
    error = body.get("error") if isinstance(body, dict) else None
    if status is not None and status < 400 and not error:
        return {"status": status, "error": None}
    if isinstance(error, dict):
        fields = {k: error.get(k) for k in ("message", "type", "param")}
    elif isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        message = detail if isinstance(detail, str) else json.dumps(detail)
        fields = {"message": message, "type": None, "param": None}
    else:
        fields = {"message": str(body)[:1000], "type": None, "param": None}
    return {"status": status, "error": fields}


async def send_all(app: Any, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Each case in order, through the app's own middleware, routes and exception handlers."""
    import httpx

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    found: dict[str, Any] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://drift") as client:
        for case in cases:
            headers = dict(case.get("headers") or {})
            content: bytes | None = None
            if case.get("raw") is not None:
                content = case["raw"].encode("utf-8")
            elif case.get("body") is not None:
                content = json.dumps(case["body"]).encode("utf-8")
            if content is not None and case.get("content_type"):
                headers["Content-Type"] = case["content_type"]
            send = client.request(case["method"], case["path"], content=content, headers=headers)
            try:
                reply = await asyncio.wait_for(send, CASE_DEADLINE_S)
            except TimeoutError:
                found[case["name"]] = outcome(None, f"no answer in {CASE_DEADLINE_S:.0f} s")
                continue
            found[case["name"]] = outcome(reply.status_code, _body(reply))
    return found


def _body(reply: Any) -> Any:
    """The JSON body; for an event stream, its first error event (None when it has none)."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        for line in reply.text.splitlines():
            if line.startswith("data:") and '"error"' in line:
                try:
                    event = json.loads(line[len("data:") :])
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("error"):
                    return event
        return None
    try:
        return reply.json()
    except ValueError:
        return reply.text


def main() -> int:
    corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
    server_args = sys.argv[sys.argv.index("--") + 1 :]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "frontend"))
    import serve  # live/frontend/serve.py: the simulated engine core's patches

    t0 = time.monotonic()
    try:
        serve.apply()
        serving: Any = __import__(SERVING, fromlist=["_"])
    except (serve.PatchError, ImportError) as exc:
        print(f"drift probe: cannot start this release's app: {exc}", file=sys.stderr)
        return PROBE_FAILED
    if not hasattr(serving, "serve_http"):
        print(f"drift probe: {SERVING} has no serve_http to replace", file=sys.stderr)
        return PROBE_FAILED
    cases = json.loads(corpus.read_text(encoding="utf-8"))

    async def probe_http(app: Any, sock: Any = None, **_: Any) -> asyncio.Future[None]:
        started = time.monotonic()
        results = await send_all(app, cases)
        from importlib import metadata

        report = {
            "vllm": metadata.version("vllm"),
            "startup_s": round(started - t0, 1),
            "send_s": round(time.monotonic() - started, 1),
            "cases": results,
        }
        out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    serving.serve_http = probe_http
    sys.argv = [ENTRY, *server_args]
    runpy.run_module(ENTRY, run_name="__main__", alter_sys=True)
    return 0 if out.is_file() else PROBE_FAILED


if __name__ == "__main__":
    sys.exit(main())
