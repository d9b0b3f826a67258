"""A headless chromium driven through the Chrome DevTools Protocol, for tests that open a page as a user would.

Only what the report test needs: start Debian's ``chromium`` headless, open a file, run JavaScript in the page or
in one of its frames, wait for a condition, take a screenshot, and collect every script error on the way
(uncaught exceptions, ``console.error`` calls and error entries of the browser's log, in every frame, out-of-process
frames included).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect

BROWSERS = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    """The chromium executable on PATH, or None."""
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


class BrowserError(AssertionError):
    pass


class Chromium:
    """One headless chromium with one page. Use as a context manager; ``errors`` lists the script errors seen."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1400, height: int = 1000):
        self.profile = Path(profile)
        self.profile.mkdir(parents=True, exist_ok=True)
        arguments = [executable, "--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
                     f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"]
        if os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")  # chromium refuses to run as root with its sandbox
        self.process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.errors: list[str] = []
        self.contexts: dict[str, tuple[int, str | None]] = {}  # frame id → (execution context id, session id)
        try:
            # the local DevTools endpoint, never through a proxy the environment may name
            self.socket = connect(self._page_socket(), max_size=None, open_timeout=30, proxy=None).__enter__()
            self._enable(None)
            self.call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True})
        except Exception:
            self.close()
            raise

    # ------------------------------------------------------------------------------------- protocol
    def _page_socket(self) -> str:
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise BrowserError(f"chromium did not start: {self.process.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        targets = json.loads(direct.open(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        return next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")

    def _enable(self, session: str | None) -> None:
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)

    def call(self, method: str, params: dict | None = None, *, session: str | None = None, timeout: float = 30):
        """Send one command (to the page, or to an attached frame's ``session``) and return its result, handling
        the events that arrive meanwhile."""
        message_id = next(self.ids)
        message = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self.socket.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)

    def _event(self, event: dict) -> None:
        method, params, session = event.get("method"), event.get("params", {}), event.get("sessionId")
        where = f" (frame of session {session})" if session else ""
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"uncaught exception{where}: {text}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"])
            self.errors.append(f"console.{params['type']}{where}: {text}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.errors.append(f"browser log{where}: {entry['text']} {entry.get('url', '')}".strip())
        elif method == "Runtime.executionContextCreated":
            context = params["context"]
            frame = context.get("auxData", {}).get("frameId")
            if frame and context.get("auxData", {}).get("isDefault"):
                self.contexts[frame] = (context["id"], session)
        elif method == "Target.attachedToTarget":
            # an out-of-process frame (a frame of another site): watch its errors too
            child = params["sessionId"]
            self._send_async("Runtime.enable", child)
            self._send_async("Log.enable", child)
            self._send_async("Page.enable", child)

    def _send_async(self, method: str, session: str) -> None:
        self.socket.send(json.dumps({"id": next(self.ids), "method": method, "params": {}, "sessionId": session}))

    def pump(self, seconds: float) -> None:
        """Handle the events of the next ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self._event(json.loads(self.socket.recv(timeout=left)))
            except TimeoutError:
                return

    # ------------------------------------------------------------------------------------ page actions
    def open(self, path: Path, timeout: float = 60) -> None:
        """Navigate to a local file and wait for its load event."""
        self.call("Page.navigate", {"url": Path(path).resolve().as_uri()})
        self.wait("document.readyState === 'complete'", timeout=timeout)

    def evaluate(self, expression: str, *, frame: str | None = None):
        """The value of a JavaScript expression (awaited when it is a promise) in the page, or in the default
        context of frame ``frame``; a thrown error is a BrowserError."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        session = None
        if frame is not None:
            if frame not in self.contexts:
                self.pump(0.2)
            if frame not in self.contexts:
                raise BrowserError(f"no script context for frame {frame}")
            params["contextId"], session = self.contexts[frame]
        result = self.call("Runtime.evaluate", params, session=session)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(f"{expression[:80]}…: {details.get('exception', {}).get('description', details)}")
        return result["result"].get("value")

    def wait(self, expression: str, *, frame: str | None = None, timeout: float = 30, what: str | None = None):
        """Wait until ``expression`` is truthy; return its value. A BrowserError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression, frame=frame)
            except BrowserError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {what or expression}")
            self.pump(0.1)

    def frames(self) -> list[dict]:
        """Every frame of the page below the main one: [{id, url}] (out-of-process frames included)."""
        tree = self.call("Page.getFrameTree")["frameTree"]
        out, stack = [], list(tree.get("childFrames", []))
        while stack:
            node = stack.pop()
            out.append({"id": node["frame"]["id"], "url": node["frame"].get("url", "")})
            stack += node.get("childFrames", [])
        return out

    def screenshot(self, path: Path) -> Path:
        """A PNG of the viewport (frames included)."""
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    # ------------------------------------------------------------------------------------------ closing
    def close(self) -> None:
        socket = getattr(self, "socket", None)
        if socket is not None:
            socket.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
