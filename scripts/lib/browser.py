#!/usr/bin/env python3
"""Drives Debian's headless Chromium over the DevTools protocol, for the console's browser tests
and for screenshots. Standard library only: a minimal WebSocket client (RFC 6455) and CDP.

Reads one JSON command per line on standard input and answers one JSON line each:
  {"op": "navigate", "url": U}            -> {"ok": true}, after the page's load event
  {"op": "eval", "expression": JS}        -> {"ok": true, "value": ...} (promises awaited)
  {"op": "follow", "expression": JS}      -> {"ok": true}: runs JS that navigates (a click, a form's
                                             submit) and waits for the next page's load event
  {"op": "screenshot", "width": W, "path": P}
                                          -> {"ok": true, "height": H}, the whole page, W px wide
  {"op": "errors"}                        -> {"ok": true, "errors": [...]}: console errors,
                                             uncaught exceptions and failed loads since the start
  {"op": "quit"}                          -> {"ok": true}, and Chromium is stopped
A failure answers {"ok": false, "error": "..."}.

    python3 scripts/lib/browser.py [--chromium PATH] [--map NAME=ADDRESS ...]
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WebSocket:
    def __init__(self, url):
        match = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        host, port, path = match.group(1), int(match.group(2)), match.group(3)
        self.sock = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("the DevTools socket closed during the handshake")
            response += chunk
        head, self.buffer = response.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("no WebSocket upgrade: " + head.decode(errors="replace"))

    def send(self, text):
        payload = text.encode()
        header = bytes([0x81])
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            header += bytes([0x80 | length])
        elif length < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", length)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def read_exactly(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the DevTools socket closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def receive(self):
        message = b""
        while True:
            first, second = self.read_exactly(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self.read_exactly(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self.read_exactly(8))[0]
            payload = self.read_exactly(length)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise RuntimeError("the DevTools socket was closed by Chromium")
            if opcode == 0x9:  # ping: answer, keep reading
                continue
            message += payload
            if first & 0x80:
                return message.decode()


class Browser:
    def __init__(self, chromium, names=()):
        self.profile = tempfile.mkdtemp(prefix="pushcamp-chromium-")
        # --map NAME=ADDRESS: the browser resolves NAME to ADDRESS, as a site's own DNS would when
        # it rebinds its name to this machine.
        rules = [f"--host-resolver-rules={', '.join(f'MAP {n} {a}' for n, a in names)}"] if names else []
        self.process = subprocess.Popen(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--remote-debugging-port=0", f"--user-data-dir={self.profile}", *rules, "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        endpoint = None
        deadline = time.time() + 60
        while endpoint is None and time.time() < deadline:
            line = self.process.stderr.readline().decode(errors="replace")
            if not line and self.process.poll() is not None:
                raise RuntimeError("chromium exited before it listened")
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                endpoint = match.group(1)
        if endpoint is None:
            raise RuntimeError("chromium did not open its DevTools port within 60 s")
        port = re.match(r"ws://[^:]+:(\d+)/", endpoint).group(1)
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t.get("type") == "page")
        self.socket = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        self.errors = []
        for method in ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"]:
            self.call(method)

    def note(self, event):
        method = event.get("method")
        params = event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            self.errors.append("console." + params["type"] + ": " + " ".join(str(t) for t in texts))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append("uncaught: " + str(details.get("exception", {}).get("description", details.get("text"))))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            self.errors.append(f"load failed: {params.get('errorText')}")
        self.events.append(event)

    def call(self, method, params=None):
        self.next_id += 1
        ident = self.next_id
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        while True:
            message = json.loads(self.socket.receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            if "method" in message:
                self.note(message)

    def wait_for(self, method, timeout=30):
        deadline = time.time() + timeout
        self.socket.sock.settimeout(timeout)
        while time.time() < deadline:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[: index + 1]
                    return event
            message = json.loads(self.socket.receive())
            if "method" in message:
                self.note(message)
        raise RuntimeError(f"no {method} within {timeout} s")

    def navigate(self, url):
        self.events.clear()
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise RuntimeError(f"navigation failed: {result['errorText']}")
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression):
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise RuntimeError("the expression threw: " + str(result["exceptionDetails"].get("text")))
        return result.get("result", {}).get("value")

    def screenshot(self, width, path):
        metrics = {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": width < 600}
        self.call("Emulation.setDeviceMetricsOverride", metrics)
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or 800)
        metrics["height"] = min(max(height, 400), 8000)
        self.call("Emulation.setDeviceMetricsOverride", metrics)
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        with open(path, "wb") as file:
            file.write(base64.b64decode(shot["data"]))
        self.call("Emulation.clearDeviceMetricsOverride")
        return metrics["height"]

    def quit(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except Exception:
            os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    chromium = None
    if "--chromium" in sys.argv:
        chromium = sys.argv[sys.argv.index("--chromium") + 1]
    chromium = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print(json.dumps({"ok": False, "error": "no chromium on PATH: apt-get install chromium"}), flush=True)
        return 1
    names = [tuple(sys.argv[i + 1].split("=", 1)) for i, a in enumerate(sys.argv) if a == "--map"]
    try:
        browser = Browser(chromium, names)
    except Exception as error:
        print(json.dumps({"ok": False, "error": str(error)}), flush=True)
        return 1
    print(json.dumps({"ok": True, "ready": True}), flush=True)
    try:
        for line in sys.stdin:
            command = json.loads(line)
            try:
                op = command["op"]
                if op == "navigate":
                    browser.navigate(command["url"])
                    answer = {"ok": True}
                elif op == "follow":
                    browser.events.clear()
                    browser.evaluate(command["expression"])
                    browser.wait_for("Page.loadEventFired")
                    answer = {"ok": True}
                elif op == "eval":
                    answer = {"ok": True, "value": browser.evaluate(command["expression"])}
                elif op == "screenshot":
                    answer = {"ok": True, "height": browser.screenshot(command["width"], command["path"])}
                elif op == "errors":
                    answer = {"ok": True, "errors": browser.errors}
                elif op == "quit":
                    print(json.dumps({"ok": True}), flush=True)
                    break
                else:
                    answer = {"ok": False, "error": f"unknown op {op}"}
            except Exception as error:
                answer = {"ok": False, "error": str(error)}
            print(json.dumps(answer), flush=True)
    finally:
        browser.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
