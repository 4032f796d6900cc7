"""browser.py: headless Debian Chromium driven through chromedriver's W3C HTTP interface
(standard library only): open a page, wait for a promise it exposes, read the browser's
console, take a screenshot. SKIP (exit 77) loudly where chromium or chromedriver is absent.
Pages are served by a local http.server on 127.0.0.1."""
import base64
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def need_browser(what):
    for p in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(p):
            print("SKIP: %s absent (apt-get install chromium chromium-driver; scripts/setup.sh "
                  "does): %s NOT TESTED" % (p, what), flush=True)
            sys.exit(77)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """http.server on 127.0.0.1 serving directory `root`, in a thread."""

    def __init__(self, root):
        h = functools.partial(_QuietHandler, directory=root)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
        self.url = "http://127.0.0.1:%d/" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map,
                          **{".js": "text/javascript", ".mjs": "text/javascript"})

    def log_message(self, *a):
        pass


class Browser:
    """One chromedriver and one headless Chromium session."""

    def __init__(self, width=1280, height=900):
        self.port = _free_port()
        self.proc = subprocess.Popen([CHROMEDRIVER, "--port=%d" % self.port],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # chromedriver prints "ChromeDriver was started successfully" once it listens
        for line in self.proc.stdout:
            if b"started successfully" in line:
                break
        else:
            raise RuntimeError("chromedriver did not start")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=%d,%d" % (width, height)]}}}}
        r = self._call("POST", "/session", caps)
        self.sid = r["sessionId"]

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data,
                                     method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as f:
                return json.loads(f.read())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError("chromedriver %s %s: %s" % (method, path, e.read()[:2000]))

    def open(self, url):
        self._call("POST", "/session/%s/url" % self.sid, {"url": url})

    def wait_promise(self, expr):
        """The value the page's promise `expr` resolves to (a JSON-able value)."""
        self._call("POST", "/session/%s/timeouts" % self.sid, {"script": 240000})
        return self._call("POST", "/session/%s/execute/async" % self.sid, {
            "script": "const cb = arguments[arguments.length - 1]; (%s).then(cb, "
                      "e => cb({ok: false, error: String(e)}));" % expr, "args": []})

    def run(self, js):
        return self._call("POST", "/session/%s/execute/sync" % self.sid,
                          {"script": js, "args": []})

    def console(self):
        """The browser console's entries since the last call: [{level, message}]."""
        return self._call("POST", "/session/%s/se/log" % self.sid, {"type": "browser"})

    def screenshot(self, path):
        png = base64.b64decode(self._call("GET", "/session/%s/screenshot" % self.sid))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)
        return path

    def close(self):
        try:
            self._call("DELETE", "/session/%s" % self.sid)
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=30)
