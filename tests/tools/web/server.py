"""A loopback HTTP server with real-world-shaped pages, for the web layer's tests."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from nestor.tools.web.addresses import AddressPolicy

LOOPBACK = AddressPolicy(allow_networks=("127.0.0.1/32",))
"""The test-only allow-list that lets the client reach the server (loopback is refused otherwise)."""

NAV_LINKS = "\n".join(f'<li><a href="/section/{n}">NAV-LINK-{n}</a></li>' for n in range(300))
TRACKING_SCRIPT = "window.dataLayer=window.dataLayer||[];" + "gtag('event','SCRIPT-NOISE',{v:1});" * 4000
ARTICLE_HTML = f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Release notes &amp; migration guide</title>
  <link rel="stylesheet" href="/static/site.css">
  <style>.hero {{ background: url(STYLE-NOISE.png); }}</style>
  <script>{TRACKING_SCRIPT}</script>
</head>
<body>
  <header class="site-header"><a href="/">HEADER-NOISE logo</a>
    <nav aria-label="main"><ul>{NAV_LINKS}</ul></nav>
  </header>
  <div class="layout">
    <aside class="sidebar">ASIDE-NOISE table of contents</aside>
    <main>
      <article>
        <h1>Release notes</h1>
        <p>Version 3.0 removes the <code>legacy</code> flag.
          See the <a href="/docs/migrate">migration guide</a>.</p>
        <h2>Breaking changes</h2>
        <ul><li>Python 3.11 is required</li><li>Configuration moved to TOML</li></ul>
        <pre><code>pip install example==3.0</code></pre>
        <table><tr><th>Option</th><th>Default</th></tr><tr><td>timeout</td><td>30</td></tr></table>
        <iframe src="https://ads.example/frame">IFRAME-NOISE</iframe>
        <svg width="10" height="10"><text>SVG-NOISE</text></svg>
        <noscript>NOSCRIPT-NOISE enable JavaScript</noscript>
      </article>
    </main>
  </div>
  <footer>FOOTER-NOISE © Example Corp · Privacy · Terms</footer>
  <script src="/static/bundle.js"></script>
  <script>console.log("SCRIPT-NOISE-2")</script>
</body>
</html>
"""
NOISE = ("SCRIPT-NOISE", "STYLE-NOISE", "HEADER-NOISE", "NAV-LINK-", "ASIDE-NOISE", "IFRAME-NOISE")
NOISE += ("SVG-NOISE", "NOSCRIPT-NOISE", "FOOTER-NOISE")

HUGE_SECTIONS = 700
HUGE_HTML = (
    "<!DOCTYPE html><html><head><title>Full reference</title></head><body><nav>NAV-NOISE</nav><main>"
    + "".join(
        f"<h2>Function number {n}</h2><p>Function {n} takes a value and returns it doubled, "
        f"rounded towards zero; it raises ValueError for NaN.</p>"
        for n in range(HUGE_SECTIONS)
    )
    + "</main><footer>FOOTER-NOISE</footer></body></html>"
)
JSON_DATA = {"name": "nestor", "tags": ["cli", "agents"], "nested": {"ok": True, "count": 3}}
FRENCH = "Le café crème coûte très cher à la fenêtre de la rue. Déjà vu, où êtes-vous allé ? Ça été é."
LATIN1_HTML = f"<html><head><title>Café</title></head><body><p>{FRENCH}</p></body></html>"
META_CHARSET_HTML = '<html><head><meta charset="iso-8859-15"></head><body><p>Prix : 5 €</p></body></html>'
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 256


@dataclass
class ServerState:
    """What the handler shares with the tests: request counts and the release of slow requests."""

    port: int = 0
    hits: Counter[str] = field(default_factory=Counter[str])
    client_ports: list[int] = field(default_factory=list[int])
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(BaseHTTPRequestHandler):
    """Routes of the test server; HTTP/1.1, so connections are kept alive between requests."""

    protocol_version = "HTTP/1.1"
    state: ServerState

    def log_message(self, format: str, *args: object) -> None:
        return None

    def handle(self) -> None:
        # A client that stops reading at its size cap closes a kept-alive connection mid-stream.
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            super().handle()

    def reply(self, body: bytes, content_type: str | None, status: int = 200, **headers: str) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The client stops reading past its cap, as it should.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def redirect(self, location: str) -> None:
        self.reply(b"", None, 302, Location=location)

    def count(self, key: str) -> int:
        with self.state.lock:
            self.state.hits[key] += 1
            self.state.client_ports.append(self.client_address[1])
            return self.state.hits[key]

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        hits = self.count(path)
        html = "text/html; charset=utf-8"
        if path == "/article.html":
            self.reply(ARTICLE_HTML.encode(), html)
        elif path == "/huge.html":
            self.reply(HUGE_HTML.encode(), html)
        elif path == "/data.json":
            self.reply(json.dumps(JSON_DATA).encode(), "application/json")
        elif path == "/latin1.html":
            self.reply(LATIN1_HTML.encode("latin-1"), "text/html; charset=iso-8859-1")
        elif path == "/meta-charset.html":
            self.reply(META_CHARSET_HTML.encode("iso-8859-15"), "text/html")
        elif path == "/image.png":
            self.reply(PNG, "image/png")
        elif path == "/missing":
            self.reply(b"<html><body><h1>Not Found</h1><p>No such page.</p></body></html>", html, 404)
        elif path.startswith("/redirect/"):
            remaining = int(path.rsplit("/", 1)[1])
            if remaining == 0:
                self.reply(b"arrived", "text/plain")
            else:
                self.redirect(f"/redirect/{remaining - 1}")
        elif path == "/to-private":
            self.redirect(f"http://127.0.0.2:{self.state.port}/article.html")
        elif path.startswith("/flaky/"):
            # /flaky/<key>/<status>/<failures>: fails <failures> times with <status>, then succeeds.
            _, _, _key, status, failures = path.split("/")
            if hits <= int(failures):
                extra = {"Retry_After": query["retry_after"][0]} if "retry_after" in query else {}
                self.reply(b"<html><body><p>Slow down, please.</p></body></html>", html, int(status), **extra)
            else:
                self.reply(f"recovered after {hits - 1} failures".encode(), "text/plain")
        elif path == "/echo":
            echo = {"host": self.headers.get("Host"), "user_agent": self.headers.get("User-Agent")}
            self.reply(json.dumps(echo).encode(), "application/json")
        elif path == "/slow":
            self.state.release.wait(30)
            self.reply(b"too late", "text/plain")
        else:
            self.reply(b"unknown route", "text/plain", 404)


@dataclass(frozen=True)
class WebServer:
    """A running test server: its base URL and shared state."""

    base: str
    state: ServerState

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on this server."""
        return f"{self.base}{path}"


@contextlib.contextmanager
def serve() -> Iterator[WebServer]:
    """Run the test server on 127.0.0.1 (a free port) until the block ends."""
    state = ServerState()
    handler = type("BoundHandler", (Handler,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield WebServer(f"http://127.0.0.1:{state.port}", state)
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()


class SleepRecorder:
    """An injected ``sleep`` that records what it was asked to wait and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
