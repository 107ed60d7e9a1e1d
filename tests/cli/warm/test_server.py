"""``nestor serve``: commands run warm as they run cold, for its own user and installation only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from nestor.cli.warm.place import installation_identity
from nestor.cli.warm.server import _holds  # pyright: ignore[reportPrivateUsage]
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.support import nestor
from tests.cli.warm.support import served_warm, sockets, stop_servers, warm_env, warm_server

RUN = ["run", "--model", "openai-chat:gpt-4o", "hi"]


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return nestor(args, cwd=cwd, env=env, timeout=120, python_options=("-X", "importtime"))


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def test_a_run_served_warm_answers_as_a_cold_one(tmp_path: Path) -> None:
    project = _project(tmp_path)
    with ScriptedOpenAIServer([ServerReply(text="warm answer")] * 4) as model:
        env = warm_env(tmp_path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="k")
        with warm_server(env):
            warm = _run([*RUN[:-1], "-o", "json", "hi"], env, project)
        cold = _run([*RUN[:-1], "-o", "json", "hi"], env | {"NESTOR_WARM": "0"}, project)
    assert served_warm(warm.stderr), warm.stderr[-2000:]
    assert not served_warm(cold.stderr)
    assert warm.returncode == cold.returncode == 0
    warm_outcome, cold_outcome = json.loads(warm.stdout), json.loads(cold.stdout)
    assert warm_outcome["result"] == cold_outcome["result"] == "warm answer"
    assert warm_outcome.keys() == cold_outcome.keys()
    # Both ran in the project folder, on one store: the warm run's session is listed by a cold command.
    listed = _run(["sessions", "list", "--json"], env | {"NESTOR_WARM": "0"}, project)
    ids = {session["id"] for session in json.loads(listed.stdout)}
    assert {warm_outcome["session_id"], cold_outcome["session_id"]} <= ids


def test_a_warm_run_keeps_its_exit_code_and_its_usage_errors(tmp_path: Path) -> None:
    env = warm_env(tmp_path)
    with warm_server(env):
        mistake = _run(["run", "--no-such-flag", "hi"], env, _project(tmp_path))
    assert served_warm(mistake.stderr)
    assert mistake.returncode == 2
    assert "error:" in mistake.stderr and "--no-such-flag" in mistake.stderr


def test_a_signal_to_the_command_stops_the_warm_run(tmp_path: Path) -> None:
    project = _project(tmp_path)
    arrived: list[float] = []

    def slow(_request: object) -> ServerReply:
        arrived.append(time.monotonic())
        time.sleep(30)
        return ServerReply(text="too late")

    with ScriptedOpenAIServer([slow]) as model:
        env = warm_env(tmp_path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="k")
        with warm_server(env):
            command = subprocess.Popen(
                [sys.executable, "-m", "nestor", *RUN],
                env=env,
                cwd=project,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            deadline = time.monotonic() + 60
            while not arrived and time.monotonic() < deadline:
                time.sleep(0.05)
            command.send_signal(signal.SIGTERM)
            assert command.wait(timeout=30) == 143


def test_a_server_of_another_installation_is_not_used(tmp_path: Path) -> None:
    project = _project(tmp_path)
    with ScriptedOpenAIServer([ServerReply(text="cold answer")] * 4) as model:
        env = warm_env(tmp_path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="k")
        # Listens where this installation's server would, but is another version of nestor.
        impostor = (
            "from nestor.cli.warm.place import installation_identity, private_dir, socket_path\n"
            "from nestor.cli.warm.server import serve\n"
            "path = socket_path(private_dir(), installation_identity())\n"
            "serve(path, 'nestor 0.0.1 elsewhere', lambda args: 99, idle_timeout_s=120)\n"
        )
        try:
            with warm_server(env, sys.executable, "-P", "-c", impostor):
                result = _run(RUN, env, project)
        finally:
            stop_servers(env)
    assert not served_warm(result.stderr)
    assert (result.returncode, result.stdout) == (0, "cold answer\n")


@pytest.mark.skipif(
    os.getuid() != 0 or not Path("/usr/bin/python3").exists(), reason="needs root and a system python"
)
def test_a_server_refuses_another_user(tmp_path: Path) -> None:
    # pytest's own folders are closed to other users: the runtime folder goes where they can reach it.
    runtime = Path(tempfile.mkdtemp(prefix="nestor-warm-test-"))
    runtime.chmod(0o711)
    env = warm_env(tmp_path) | {"XDG_RUNTIME_DIR": str(runtime)}
    try:
        answer = _ask_as_nobody(env)
    finally:
        shutil.rmtree(runtime)
    assert answer.stdout.strip(), answer.stderr
    assert json.loads(answer.stdout) == {"refused": "another user"}


def _ask_as_nobody(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    with warm_server(env):
        (path,) = sockets(env)
        # The folder (0700) and the socket (0600) already keep other users out; open both so that
        # only the server's own check of the caller stands between another user and the server.
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.parent.stat().st_mode & 0o777 == 0o700
        path.parent.chmod(0o711)
        path.chmod(0o666)
        identity = installation_identity()
        probe = (
            "import array, json, socket, struct, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "body = json.dumps({'identity': sys.argv[2], 'argv0': 'x', 'args': ['--version'],"
            " 'cwd': '/', 'env': {}}).encode()\n"
            "fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0, 1, 2]).tobytes())]\n"
            # The server may refuse (and close) before the request is sent: its answer is still there.
            "try:\n"
            "    s.sendmsg([struct.pack('!I', len(body))], fds); s.sendall(body)\n"
            "except (BrokenPipeError, ConnectionResetError):\n"
            "    pass\n"
            "print(s.makefile().readline())\n"
        )
        return subprocess.run(
            ["/usr/bin/python3", "-c", probe, str(path), identity],
            user=65534,
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


def test_a_runtime_folder_others_may_enter_is_not_used(tmp_path: Path) -> None:
    env = warm_env(tmp_path)
    folder = Path(env["XDG_RUNTIME_DIR"]) / "nestor"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    try:
        result = _run(["run", "--no-such-flag", "hi"], env, _project(tmp_path))
        time.sleep(1)  # a server started by mistake would be starting now
        assert not any(b"nestor\0serve" in (p / "cmdline").read_bytes() for p in _processes_of(env))
    finally:
        stop_servers(env)
    assert result.returncode == 2
    served = _run(["serve"], env, tmp_path)
    assert served.returncode == 1 and "0700" in served.stderr
    assert sockets(env) == []


def test_the_first_cold_run_starts_a_server_that_the_next_uses(tmp_path: Path) -> None:
    env = warm_env(tmp_path)
    project = _project(tmp_path)
    first = _run(["run", "--no-such-flag", "hi"], env, project)
    assert first.returncode == 2 and not served_warm(first.stderr)
    deadline = time.monotonic() + 120
    while not sockets(env) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert len(sockets(env)) == 1
        second = _run(["run", "--no-such-flag", "hi"], env, project)
        assert second.returncode == 2 and served_warm(second.stderr)
    finally:
        stop_servers(env)


def _runtime_files(env: dict[str, str]) -> list[str]:
    return sorted(entry.name for entry in (Path(env["XDG_RUNTIME_DIR"]) / "nestor").iterdir())


def test_a_server_stopped_by_sigterm_removes_its_socket_and_its_lock(tmp_path: Path) -> None:
    env = warm_env(tmp_path)
    with warm_server(env) as server:
        assert [name.endswith((".sock", ".sock.lock")) for name in _runtime_files(env)] == [True, True]
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert _runtime_files(env) == []


def test_an_idle_server_exits_and_removes_its_socket_and_its_lock(tmp_path: Path) -> None:
    env = warm_env(tmp_path)
    with warm_server(env, idle_timeout_s=1) as server:
        assert server.wait(timeout=60) == 0
    assert _runtime_files(env) == []


def test_a_lock_counts_only_while_its_path_names_the_file_locked(tmp_path: Path) -> None:
    lock_path = str(tmp_path / "serve.sock.lock")
    with open(lock_path, "a") as first, open(lock_path, "a") as second:
        assert _holds(first, lock_path)
        assert not _holds(second, lock_path)  # the first server holds it
    with open(lock_path, "a") as late:
        os.unlink(lock_path)  # a server exiting removed the file this one had opened
        Path(lock_path).touch()  # and a new server made its own
        assert not _holds(late, lock_path)


def _processes_of(env: dict[str, str]) -> list[Path]:
    """The processes whose environment names the runtime folder of ``env``."""
    marker = f"XDG_RUNTIME_DIR={env['XDG_RUNTIME_DIR']}".encode()
    found: list[Path] = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(entry)
        except OSError:
            continue
    return found


_CHILD_SCRIPT = """
import os, sys
from nestor.cli.warm.server import prepare
prepare()
print("THREADS", len(os.listdir("/proc/self/task")))  # a fork copies only the thread that calls it
import nestor.testing
from nestor.cli.entry import run_here
server_class, reply_class, url_key, key_key, model = sys.argv[1:]
seen = []
def answer(_request):
    seen.append(set(sys.modules))
    return getattr(nestor.testing, reply_class)(text="ok")
with getattr(nestor.testing, server_class)([answer] * 4) as server:
    before = set(sys.modules)
    os.environ.update({url_key: server.base_url, key_key: "k"})
    code = run_here(["run", "--model", model, "hi"])
print("NEW", code, " ".join(sorted(seen[0] - before)))
"""


@pytest.mark.parametrize(
    "provider",
    [
        ("ScriptedOpenAIServer", "ServerReply", "OPENAI_BASE_URL", "OPENAI_API_KEY", "openai-chat:gpt-4o"),
        (
            *("ScriptedAnthropicServer", "AnthropicReply", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
            "anthropic:claude-sonnet-4-5",
        ),
        (
            *("ScriptedGeminiServer", "ServerReply", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY"),
            "google:gemini-2.5-flash",
        ),
    ],
    ids=["openai", "anthropic", "google"],
)
def test_the_prepared_server_holds_one_thread_and_its_child_imports_nothing_before_its_request(
    tmp_path: Path, provider: tuple[str, ...]
) -> None:
    project = _project(tmp_path)
    env = warm_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD_SCRIPT, *provider],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "THREADS 1" in done.stdout.splitlines(), done.stdout + done.stderr[-2000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("NEW")]
    _new, code, *imported = line.split()
    assert code == "0"
    assert imported == []


_INITIALIZE = {
    ("mcp", "serve"): {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    },
    ("acp",): {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
}


@pytest.mark.parametrize("command", list(_INITIALIZE))
def test_the_stdio_servers_served_warm_speak_over_the_callers_stdio(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    env = warm_env(tmp_path)
    with warm_server(env):
        session = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "nestor", *command],
            env=env,
            cwd=_project(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert session.stdin is not None and session.stdout is not None and session.stderr is not None
        session.stdin.write(json.dumps(_INITIALIZE[command]).encode() + b"\n")
        session.stdin.flush()
        reply = json.loads(session.stdout.readline())
        session.stdin.close()  # the client leaves: the server ends
        assert session.wait(timeout=60) == 0
        assert served_warm(session.stderr.read().decode())
    assert reply["id"] == 1 and "result" in reply
