"""A real headless Chromium, driven over the DevTools protocol on a pipe (no websocket library).

`--remote-debugging-pipe` makes Chromium read protocol messages from fd 3 and write them to
fd 4, each a JSON object ended by a NUL byte: the standard library is enough to load a page,
evaluate JavaScript in it and send real mouse events through the browser's own hit-testing
(a click on a `<summary>` is a click, not `details.open = true` from a script).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser")
# Puts our pipe ends on the fds the protocol uses (3: commands in, 4: answers out), then
# becomes Chromium. Python, not sh: dash cannot redirect from fds above 9.
TRAMPOLINE = """
import os, sys
inbound, outbound = int(sys.argv[1]), int(sys.argv[2])
os.dup2(inbound, 3)
os.dup2(outbound, 4)
for fd in {inbound, outbound} - {3, 4}:
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""


def find() -> str | None:
    """The Chromium binary: TITO_CHROMIUM, else Debian's `chromium` on PATH."""
    explicit = os.environ.get("TITO_CHROMIUM")
    if explicit:
        return shutil.which(explicit)  # a wrong path is no Chromium, not a crash later
    return next((path for name in NAMES if (path := shutil.which(name))), None)


def version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, binary: str, width: int = 1400, height: int = 1000, timeout: float = 60):
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="tito-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        args = [
            "--headless",
            "--no-sandbox",  # root in a container: Chromium's sandbox needs user namespaces
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile.name}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.process = subprocess.Popen(
            [sys.executable, "-c", TRAMPOLINE, str(to_browser_r), str(from_browser_w), binary]
            + args,
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.session = ""

    def __enter__(self) -> Browser:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, False
        )
        self.session = attached["sessionId"]
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):  # it may close first
            self.send("Browser.close", session=False)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self.profile.cleanup()

    # -- the protocol --------------------------------------------------------------------
    def send(
        self, method: str, params: dict[str, Any] | None = None, session: bool = True
    ) -> dict[str, Any]:
        """One command; its result (events arriving meanwhile are dropped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._receive()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"Chromium did not answer in {self.timeout} s")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                err = (
                    self.process.stderr.read().decode(errors="replace")
                    if self.process.stderr
                    else ""
                )
                raise RuntimeError(f"Chromium closed the pipe: {err[-2000:]}")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        data: dict[str, Any] = json.loads(raw)
        return data

    # -- what a test does ----------------------------------------------------------------
    def open(self, path: Path) -> None:
        """Load a file and wait until it has loaded (styles applied, layout possible)."""
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        deadline = time.monotonic() + self.timeout
        while (
            self.evaluate("document.readyState") != "complete"
            or self.evaluate("location.href") != path.resolve().as_uri()
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not load")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value in the page (JSON-serialisable)."""
        out = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def click(self, selector: str) -> None:
        """A real left click at the centre of the element (scrolled into view first)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
        )
        at = {"x": box["x"], "y": box["y"]}
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", **at})
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent", {"type": kind, **at, "button": "left", "clickCount": 1}
            )

    def screenshot(self, path: Path) -> None:
        """The whole page as PNG (for a person looking at what the test saw)."""
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))
