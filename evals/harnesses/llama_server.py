"""The model server every peer harness talks to, a token-counting proxy in front of it, and peer plumbing.

Peers (aider, mini-swe-agent) speak the OpenAI chat API, so they get llama-cpp-python's
OpenAI-compatible server (``python -m llama_cpp.server``) on the same GGUF, context window and
thread count as nestor, rendering prompts with the chat template stored in the GGUF
(``--chat_format chat_template.default``), as nestor does. It runs from its own venv
(``<work_dir>/venvs/llama-server``) with the ``[server]`` extra, whose llama-cpp-python comes
from pip's wheel cache (the main install built it), and is started once per eval run and shared
by all peers: :func:`acquire_server` / :func:`release_server` count the users.

Tokens are counted the same way for every peer by :class:`UsageProxy`, a small reverse proxy on
127.0.0.1 that forwards everything to the server and adds up the ``usage`` the server reports
in each response: ``prompt_tokens`` (the whole prompt of each request, prefix-cached or not) and
``completion_tokens``. The peers are driven without streaming, so every response carries its
exact usage. A streamed request is asked for ``stream_options.include_usage``; llama-cpp-python
ignores that option, so when a stream ends without any usage the proxy counts its content
chunks as completion tokens (the server sends one chunk per generated token) and marks the
request *unmetered*: its prompt tokens are unknown, and :attr:`Usage.exact` turns False.

The rest (:func:`ensure_venv`, :func:`peer_environment`, :func:`new_run_dir`) is what both peer
harnesses need to install themselves and run headless, shut off from everything but loopback.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, ClassVar

from evals.harnesses.base import EvalContext
from evals.processes import Finished, toolchain_homes

LLAMA_CPP_VERSION = "0.3.36"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
"""The model name the server answers to; peers ask for ``openai/<MODEL_ALIAS>``."""
SERVER_START_TIMEOUT_S = 300.0
KILL_GRACE_S = 60.0
"""Time past a task's budget before a peer is killed: the grace nestor's harness gives nestor too."""
SETTLE_GRACE_S = 3.0
"""How long :meth:`LlamaServer.settle` waits for requests to finish before it restarts the server."""

# Headers that belong to one connection, not to the message: never copied across the proxy.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


# -- usage counting ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens the server reported since the last :meth:`UsageProxy.reset_usage`.

    Attributes:
        prompt_tokens: Sum of ``usage.prompt_tokens`` over the metered responses.
        completion_tokens: Sum of ``usage.completion_tokens``, plus the chunk counts of unmetered streams.
        requests: Completion requests forwarded (failed ones included).
        unmetered: Streamed responses that carried no usage (their prompt tokens are missing).

    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    unmetered: int = 0

    @property
    def exact(self) -> bool:
        """True when every response reported its usage, so both sums are the server's own counts."""
        return self.unmetered == 0


class UsageProxy:
    """A reverse proxy on 127.0.0.1 that forwards to ``upstream`` and sums the token usage of the responses.

    Args:
        upstream_host: The server's host.
        upstream_port: The server's port.
        timeout_s: How long one upstream request may take (a slow CPU model can think for minutes).

    """

    def __init__(self, upstream_host: str, upstream_port: int, *, timeout_s: float = 3600.0) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._usage = Usage()
        # Bumped by every reset: a response that arrives later (a request the last run left
        # behind) is not counted for the next run.
        self._epoch = 0
        self._in_flight = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the proxy listens on (after :meth:`start`)."""
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL clients should use, ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> UsageProxy:
        """Listen on a free loopback port and serve from a daemon thread."""
        proxy = self

        class Handler(_ProxyHandler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="usage-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> UsageProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset_usage(self) -> None:
        """Start counting from zero; responses to requests made before now are no longer counted."""
        with self._lock:
            self._usage = Usage()
            self._epoch += 1

    @property
    def in_flight(self) -> int:
        """Requests forwarded upstream and not answered yet."""
        with self._lock:
            return self._in_flight

    def begin(self) -> int:
        """Note a request going upstream; returns the epoch to pass to :meth:`record` and :meth:`end`."""
        with self._lock:
            self._in_flight += 1
            return self._epoch

    def end(self) -> None:
        """Note that a request from :meth:`begin` is over (answered or failed)."""
        with self._lock:
            self._in_flight -= 1

    def usage(self) -> Usage:
        """The usage counted since the last reset."""
        with self._lock:
            return self._usage

    def record(
        self, epoch: int, prompt_tokens: int, completion_tokens: int, *, request: bool, unmetered: bool
    ) -> None:
        """Add one response's tokens, unless the usage was reset since its request began.

        Args:
            epoch: What :meth:`begin` returned for the request.
            prompt_tokens: Its ``usage.prompt_tokens``.
            completion_tokens: Its ``usage.completion_tokens`` (or its chunk count, when unmetered).
            request: It answered a completion request (counted in :attr:`Usage.requests`).
            unmetered: It carried no usage (counted in :attr:`Usage.unmetered`).

        """
        with self._lock:
            if epoch != self._epoch:
                return
            u = self._usage
            self._usage = Usage(
                prompt_tokens=u.prompt_tokens + prompt_tokens,
                completion_tokens=u.completion_tokens + completion_tokens,
                requests=u.requests + int(request),
                unmetered=u.unmetered + int(unmetered),
            )


class _ProxyHandler(BaseHTTPRequestHandler):
    """Forwards one request upstream and its response back, counting the usage it carries."""

    owner: ClassVar[UsageProxy]
    # HTTP/1.0 answers end with the connection, so a stream of unknown length needs no chunking.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep quiet: the server's own log has every request."""

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        completion = self.command == "POST" and self.path.rstrip("/").endswith("completions")
        request: dict[str, Any] = {}
        if completion:
            with contextlib.suppress(ValueError):
                loaded = json.loads(body)
                if isinstance(loaded, dict):
                    request = loaded
        client_wants_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        if request.get("stream") and not client_wants_usage:
            # Ask for the usage chunk (OpenAI's way); servers that support it send it last.
            request["stream_options"] = {**(request.get("stream_options") or {}), "include_usage": True}
            body = json.dumps(request).encode()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP | {"host"}}
        headers["Content-Length"] = str(len(body))
        epoch = self.owner.begin()
        upstream = http.client.HTTPConnection(
            self.owner.upstream_host, self.owner.upstream_port, timeout=self.owner.timeout_s
        )
        try:
            try:
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                response = upstream.getresponse()
            except OSError as exc:
                if completion:
                    self.owner.record(epoch, 0, 0, request=True, unmetered=False)
                with contextlib.suppress(OSError):
                    self.send_error(502, f"upstream failed: {exc}")
                return
            if "text/event-stream" in (response.getheader("Content-Type") or ""):
                self._relay_stream(response, epoch, counted=completion, hide_usage=not client_wants_usage)
            else:
                self._relay_body(response, epoch, counted=completion)
        finally:
            # Closing the upstream connection also stops a stream the client walked away from.
            upstream.close()
            self.owner.end()

    def _send_head(self, response: http.client.HTTPResponse, length: int | None) -> None:
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _relay_body(self, response: http.client.HTTPResponse, epoch: int, *, counted: bool) -> None:
        try:
            data = response.read()
        except OSError:
            data = b""
        if counted:
            # Counted before the client gets it: a client gone by now still cost these tokens.
            usage: dict[str, Any] = {}
            with contextlib.suppress(ValueError, AttributeError):
                usage = json.loads(data).get("usage") or {}
            self.owner.record(
                epoch,
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                request=True,
                unmetered=False,
            )
        with contextlib.suppress(OSError):
            self._send_head(response, len(data))
            self.wfile.write(data)

    def _relay_stream(
        self, response: http.client.HTTPResponse, epoch: int, *, counted: bool, hide_usage: bool
    ) -> None:
        usage: dict[str, Any] | None = None
        chunks = 0
        pending: list[bytes] = []  # the lines of the event being read, sent when it is complete
        try:
            self._send_head(response, None)
            while line := response.readline():
                pending.append(line)
                if line.strip():
                    continue
                event = b"".join(pending)
                pending = []
                chunk = _event_json(event)
                if chunk is not None:
                    if chunk.get("usage"):
                        usage = chunk["usage"]
                        if hide_usage and not chunk.get("choices"):
                            # A usage chunk the client did not ask for: some clients expect choices.
                            continue
                    if any(_delta_has_output(choice) for choice in chunk.get("choices") or []):
                        chunks += 1
                self.wfile.write(event)
                self.wfile.flush()
            self.wfile.write(b"".join(pending))
        except OSError:
            pass  # the client or the server went away; count what was streamed until then
        if not counted:
            return
        if usage is not None:
            self.owner.record(
                epoch,
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                request=True,
                unmetered=False,
            )
        else:
            self.owner.record(epoch, 0, chunks, request=True, unmetered=True)


def _event_json(event: bytes) -> dict[str, Any] | None:
    """The JSON object of one server-sent event's ``data:`` lines, or None (``[DONE]``, comments)."""
    data = b"".join(line[5:].strip() for line in event.splitlines() if line.startswith(b"data:"))
    if not data or data == b"[DONE]":
        return None
    try:
        loaded = json.loads(data)
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def _delta_has_output(choice: Any) -> bool:
    delta = choice.get("delta") if isinstance(choice, dict) else None
    return isinstance(delta, dict) and bool(delta.get("content") or delta.get("tool_calls"))


# -- the model server -------------------------------------------------------------------------


class LlamaServer:
    """llama-cpp-python's OpenAI-compatible server on the eval's GGUF, behind a :class:`UsageProxy`.

    Args:
        context: The eval run's model, threads, context window and work directory.

    """

    def __init__(self, context: EvalContext) -> None:
        self.context = context
        self.venv = context.work_dir / "venvs" / "llama-server"
        self.log_path = context.work_dir / "logs" / "llama-server.log"
        self.model_name = MODEL_ALIAS
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._proxy: UsageProxy | None = None
        self._env: dict[str, str] = {}

    @property
    def base_url(self) -> str:
        """The proxy's OpenAI base URL (``http://127.0.0.1:PORT/v1``): what peers must use."""
        return self._running_proxy().base_url

    @property
    def litellm_model(self) -> str:
        """The model string litellm-based peers pass (``openai/<alias>``)."""
        return f"openai/{self.model_name}"

    def start(self) -> None:
        """Install the server's venv if needed, start the server, wait until it answers, start the proxy.

        Raises:
            RuntimeError: The venv cannot be built, or the server exits or does not answer in time
                (the message ends with the last lines of its log).

        """
        self._env = peer_environment(self.venv, home=self.context.work_dir / "homes" / "llama-server")
        # nestor's engine asks the same of OpenMP: do not spin idle threads on a shared CPU.
        self._env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        ensure_venv(
            self.venv,
            [f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}"],
            check=("llama-cpp-python", LLAMA_CPP_VERSION),
            import_check="import llama_cpp.server.app, uvicorn, fastapi, sse_starlette, starlette_context",
            log=self.context.work_dir / "logs" / "llama-server-install.log",
            probe_env=self._env,
        )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        port = self._launch()
        self._proxy = UsageProxy("127.0.0.1", port).start()

    def _launch(self) -> int:
        """Start the server process on a free port and wait until it answers; returns the port."""
        assert self._log is not None
        port = free_port()
        command = [
            str(self.venv / "bin" / "python"),
            "-m",
            "llama_cpp.server",
            *("--model", str(self.context.model_path)),
            *("--model_alias", self.model_name),
            # The GGUF's own Jinja template, exactly what nestor renders (no guessed built-in format).
            *("--chat_format", "chat_template.default"),
            *("--n_ctx", str(self.context.context_window)),
            *("--n_threads", str(self.context.threads)),
            *("--n_threads_batch", str(self.context.threads)),
            *("--seed", "0"),  # nestor's engine seed
            *("--host", "127.0.0.1"),
            *("--port", str(port)),
        ]
        self._log.write(f"\n$ {shlex.join(command)}\n".encode())
        self._log.flush()
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self._env,
            start_new_session=True,
        )
        self._wait_until_ready(port)
        return port

    def settle(self) -> None:
        """Make sure the model is idle: restart the server if a request is still being answered.

        A peer killed at its time limit leaves its last request behind, and llama-cpp-python goes
        on generating a non-streamed answer for a client that is gone, holding the CPU (and the
        model) the next run needs. Call this after every run.
        """
        proxy = self._running_proxy()
        # A run that ended normally may exit a moment before the proxy has closed its last request.
        deadline = time.monotonic() + SETTLE_GRACE_S
        while proxy.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        if proxy.in_flight == 0 or self._process is None:
            return
        assert self._log is not None
        self._log.write(b"\n[eval: restarting the server to drop a request left behind by a stopped run]\n")
        self._log.flush()
        stop_process_group(self._process)
        self._process = None
        proxy.upstream_port = self._launch()

    def _wait_until_ready(self, port: int) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        url = f"http://127.0.0.1:{port}/v1/models"
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"llama-cpp-python server exited with {self._process.returncode}: {self._tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"llama-cpp-python server did not answer in {SERVER_START_TIMEOUT_S:.0f}s: {self._tail()}"
        )

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
            return " | ".join(lines[-5:])
        return f"(see {self.log_path})"

    def _running_proxy(self) -> UsageProxy:
        if self._proxy is None:
            raise RuntimeError("the llama-cpp-python server is not started")
        return self._proxy

    def reset_usage(self) -> None:
        """Start counting tokens from zero (call before each task)."""
        self._running_proxy().reset_usage()

    def usage(self) -> Usage:
        """Tokens counted since :meth:`reset_usage`."""
        return self._running_proxy().usage()

    def stop(self) -> None:
        """Stop the proxy and the server (its whole process group)."""
        if self._proxy is not None:
            self._proxy.stop()
            self._proxy = None
        if self._process is not None:
            stop_process_group(self._process)
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None


_shared_lock = threading.Lock()
_shared: LlamaServer | None = None
_shared_users = 0


def acquire_server(context: EvalContext) -> LlamaServer:
    """The run's one server, started on first use; pair every call with :func:`release_server`.

    Raises:
        RuntimeError: The server cannot start, or one is already running for another model,
            context window or thread count.

    """
    global _shared, _shared_users
    with _shared_lock:
        if _shared is None:
            server = LlamaServer(context)
            try:
                server.start()
            except BaseException:
                server.stop()
                raise
            _shared = server
            # The server runs in its own session: make sure it does not outlive an eval that crashed.
            atexit.register(server.stop)
        elif (_shared.context.model_path, _shared.context.context_window, _shared.context.threads) != (
            context.model_path,
            context.context_window,
            context.threads,
        ):
            raise RuntimeError(
                "a llama-cpp-python server already runs with another model, context or threads"
            )
        _shared_users += 1
        return _shared


def release_server() -> None:
    """Give back a server from :func:`acquire_server`; the last user stops it."""
    global _shared, _shared_users
    with _shared_lock:
        _shared_users = max(0, _shared_users - 1)
        if _shared_users == 0 and _shared is not None:
            _shared.stop()
            atexit.unregister(_shared.stop)
            _shared = None


# -- peer plumbing ----------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ensure_venv(
    venv: Path,
    requirements: Sequence[str],
    *,
    check: tuple[str, str],
    import_check: str,
    log: Path,
    probe_env: Mapping[str, str] | None = None,
    python: str | None = None,
) -> Path:
    """Make ``venv`` (with this Python, or ``python``) hold ``requirements``, reusing it when it already does.

    Args:
        venv: The venv directory.
        requirements: pip requirement strings.
        check: A distribution and the version that must be installed for the venv to be reused.
        import_check: Python code that must run in the venv for it to be reused (and after installing).
        log: File that receives pip's output.
        probe_env: The environment the checks run in: the peer's own, so that importing it
            writes nothing outside the work directory and reaches no network.
        python: The interpreter that makes the venv (a peer that needs a newer Python than this one).

    Returns:
        The venv's ``bin`` directory.

    Raises:
        RuntimeError: pip failed, or the venv still fails the checks afterwards.

    """
    venv_python = venv / "bin" / "python"
    probe = f"import importlib.metadata as m; assert m.version({check[0]!r}) == {check[1]!r}; {import_check}"
    if venv_python.exists() and _succeeds([str(venv_python), "-c", probe], probe_env):
        return venv / "bin"
    if venv.exists():
        shutil.rmtree(venv)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        steps = [
            [python or sys.executable, "-m", "venv", str(venv)],
            [str(venv_python), "-m", "pip", "install", "--disable-pip-version-check", *requirements],
        ]
        for step in steps:
            out.write(f"\n$ {' '.join(step)}\n".encode())
            out.flush()
            done = subprocess.run(
                step, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"installing {' '.join(requirements)} failed (exit {done.returncode}); see {log}"
                )
    if not _succeeds([str(venv_python), "-c", probe], probe_env):
        raise RuntimeError(f"{venv} does not import what it should after installing; see {log}")
    return venv / "bin"


def _succeeds(command: list[str], env: Mapping[str, str] | None) -> bool:
    try:
        done = subprocess.run(
            command,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


# Variables that could send a peer elsewhere than the local server, or hand it someone's key.
_DROPPED_ENV_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL", "_API_TOKEN")
_DROPPED_ENV = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})


def peer_environment(venv: Path, *, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a peer process: this one's, minus keys and proxies, with its own home.

    ``HOME`` and the XDG directories point inside ``home`` (created), so a peer's settings,
    caches and analytics ids stay in the eval's work directory and no user configuration leaks in.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _DROPPED_ENV and not key.upper().endswith(_DROPPED_ENV_SUFFIXES)
    }
    for sub in ("", ".config", ".cache", ".local/share"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
            # Hugging Face libraries, should a peer import one: never reach the hub.
            "HF_HUB_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "DO_NOT_TRACK": "1",
        }
    )
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    env.update(toolchain_homes())  # rustup's toolchain, which the private HOME would hide
    env.update(extra or {})
    return env


def new_run_dir(work_dir: Path, harness: str, task_id: str) -> Path:
    """A new directory ``<work_dir>/runs/<harness>/<task_id>-<time>`` for one run's logs and files."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe_id = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)
    parent = work_dir / "runs" / re.sub(r"[^A-Za-z0-9._-]+", "_", harness)
    run_dir = parent / f"{safe_id}-{stamp}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = parent / f"{safe_id}-{stamp}-{suffix}"
    run_dir.mkdir(parents=True)
    return run_dir


def write_run_log(path: Path, command: Sequence[str], finished: Finished) -> None:
    """Write a peer run's command, exit and whole output to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"$ {shlex.join(command)}\n"
        f"exit {finished.returncode} after {finished.seconds:.1f} s"
        f"{' (timed out)' if finished.timed_out else ''}\n"
        f"--- stdout ---\n{finished.stdout}\n--- stderr ---\n{finished.stderr}",
        encoding="utf-8",
    )


def stop_process_group(process: subprocess.Popen[Any], grace_s: float = 5.0) -> None:
    """SIGTERM the process's group, then SIGKILL it if it is still there after ``grace_s``."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; its group may still hold children that ignored SIGTERM.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        return
