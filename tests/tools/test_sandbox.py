"""The bash tool's OS sandbox, through real bubblewrap and Landlock processes on real files.

Every test runs on each backend this machine has; a backend is skipped only when the machine lacks
it, with the reason. ``test_a_backend_works_here`` fails where neither works, so that a machine
without a sandbox cannot pass by skipping everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from nestor.tools.base import ToolContext, ToolResult
from nestor.tools.bash import BashParams, BashTool
from nestor.tools.sandbox.bwrap import bwrap_argv
from nestor.tools.sandbox.detect import LANDLOCK_NETWORK_ABI, Availability, Backend, bwrap_problem, detect
from nestor.tools.sandbox.landlock_exec import EXIT_SANDBOX_FAILED, abi_version
from nestor.tools.sandbox.policy import SandboxPolicy

# The interpreter itself, not the venv's link to it: a checkout under /tmp (a CI clone, say) has its
# venv hidden inside the sandbox, whose /tmp is private.
_INTERPRETER = os.path.realpath(sys.executable)


async def skip_unless_available(backend: Backend) -> None:
    if backend == "bwrap":
        if problem := bwrap_problem():
            pytest.skip(f"bubblewrap unusable on this machine: {problem}")
    elif abi_version() < 1:
        pytest.skip("this kernel has no Landlock")


@pytest.fixture(params=["bwrap", "landlock"])
async def backend(request: pytest.FixtureRequest) -> Backend:
    chosen: Backend = request.param
    await skip_unless_available(chosen)
    return chosen


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    return root.resolve()


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(project_root=project)


@pytest.fixture
async def loopback_port() -> AsyncIterator[int]:
    """A TCP server on 127.0.0.1 that accepts and closes; yields its port."""

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def run(command: str, ctx: ToolContext, policy: SandboxPolicy | None, backend: Backend) -> ToolResult:
    tool = BashTool(sandbox=policy, backend=backend, kill_grace_seconds=0.5)
    return await tool.run(BashParams(command=command, timeout=20), ctx)


def connect_command(port: int) -> str:
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"


async def test_a_backend_works_here() -> None:
    found = await detect(refresh=True)

    assert found.backend is not None, found.notice()


async def test_read_only_blocks_writes_in_the_project_and_outside(
    backend: Backend, ctx: ToolContext, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    command = f"echo x > in-project; touch {outside}/x; echo ok"

    result = await run(command + "; false", ctx, SandboxPolicy.read_only(), backend)

    assert not (ctx.project_root / "in-project").exists()
    assert not (outside / "x").exists()
    assert "Read-only file system" in result.content or "Permission denied" in result.content
    assert result.content.endswith(
        "(sandbox: this agent is read-only: writes outside $TMPDIR and network access are blocked)"
    )
    unsandboxed = await run(command, ctx, None, backend)
    assert unsandboxed.content == "ok" and (outside / "x").exists()


async def test_read_only_blocks_the_home_directory(backend: Backend, ctx: ToolContext) -> None:
    home = Path.home().resolve()
    if home.is_relative_to(Path("/tmp")) or not home.is_dir():
        pytest.skip(f"the home directory {home} is a temp dir or missing")
    target = home / f"nestor-sandbox-test-{uuid.uuid4().hex}"
    try:
        result = await run(f'echo x > "$HOME/{target.name}"', ctx, SandboxPolicy.read_only(), backend)

        assert not target.exists()
        assert result.metadata["exit_code"] != 0
    finally:
        target.unlink(missing_ok=True)


async def test_read_only_has_a_private_writable_tmp(backend: Backend, ctx: ToolContext) -> None:
    result = await run(
        'echo private > "$TMPDIR/note" && cat "$TMPDIR/note"', ctx, SandboxPolicy.read_only(), backend
    )

    assert result.content == "private"


async def test_read_only_commands_can_make_semaphores(backend: Backend, ctx: ToolContext) -> None:
    # Python's multiprocessing (pytest-xdist, ...) needs a POSIX semaphore, a file in /dev/shm.
    command = f"{_INTERPRETER} -c 'import multiprocessing; multiprocessing.Lock(); print(\"ok\")'"

    result = await run(command, ctx, SandboxPolicy.read_only(), backend)

    assert result.content == "ok"


async def test_read_only_has_no_network(backend: Backend, ctx: ToolContext, loopback_port: int) -> None:
    if backend == "landlock" and abi_version() < LANDLOCK_NETWORK_ABI:
        pytest.skip(f"Landlock ABI {abi_version()} cannot restrict TCP (needs {LANDLOCK_NETWORK_ABI})")

    result = await run(connect_command(loopback_port), ctx, SandboxPolicy.read_only(), backend)

    assert "connected" not in result.content
    assert result.metadata["exit_code"] != 0


async def test_workspace_write_writes_the_project_and_temp_dirs_only(
    backend: Backend, ctx: ToolContext, tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    policy = SandboxPolicy(temp_dirs=(temp,))

    result = await run(f"echo a > made && echo b > {temp}/t && echo c > {sibling}/s", ctx, policy, backend)

    assert (ctx.project_root / "made").read_text() == "a\n"
    assert (temp / "t").read_text() == "b\n"
    assert not (sibling / "s").exists()
    assert result.content.endswith("(sandbox: writes outside the project and the temp dirs are blocked)")


async def test_an_ordinary_failure_does_not_blame_the_sandbox(backend: Backend, ctx: ToolContext) -> None:
    result = await run("echo 'FAILED test_add - assert 1 == 2'; exit 1", ctx, SandboxPolicy(), backend)
    assert "Exit code: 1" in result.content and "sandbox" not in result.content


async def test_workspace_write_uses_tmp_by_default(
    backend: Backend, ctx: ToolContext, tmp_path: Path
) -> None:
    # tmp_path lies under the system temp dir, outside the project.
    outside = tmp_path / "scratch"
    outside.mkdir()

    result = await run(f"echo a > {outside}/t && echo done", ctx, SandboxPolicy(), backend)

    assert result.content == "done"


async def test_workspace_write_keeps_the_git_dir_read_only_as_a_whole(
    ctx: ToolContext, project: Path
) -> None:
    # bwrap only: Landlock cannot deny a path beneath a writable one (its notice says so).
    await skip_unless_available("bwrap")
    backend: Backend = "bwrap"

    result = await run(
        "echo x > made; echo evil > .git/hooks/pre-commit; echo evil >> .git/config; echo ok > .git/HEAD; "
        "echo /tmp/evil > .git/commondir",
        ctx,
        SandboxPolicy(),
        backend,
    )

    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not (project / ".git" / "HEAD").exists()
    assert not (project / ".git" / "commondir").exists()
    assert (project / "made").read_text() == "x\n"
    assert "Read-only file system" in result.content
    assert "the repository's .git is read-only to commands" in result.content


async def test_writable_git_still_protects_hooks_config_and_pointers(ctx: ToolContext, project: Path) -> None:
    await skip_unless_available("bwrap")
    backend: Backend = "bwrap"

    result = await run(
        "echo evil > .git/hooks/pre-commit; echo evil >> .git/config; echo ok > .git/HEAD; "
        "echo /tmp/evil > .git/commondir",
        ctx,
        SandboxPolicy(writable_git=True),
        backend,
    )

    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert (project / ".git" / "HEAD").read_text() == "ok\n"
    assert not (project / ".git" / "commondir").exists()  # removed once the command ended
    assert "Read-only file system" in result.content
    assert "[sandbox] writable_git" not in result.content


def _git(*args: str, cwd: Path) -> str:
    import subprocess

    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _init_repo(project: Path) -> None:
    import shutil

    shutil.rmtree(project / ".git")
    _git("init", "-q", ".", cwd=project)


def _init_worktree(project: Path) -> None:
    import shutil

    main = project.parent / "main"
    _git("init", "-q", str(main), cwd=project.parent)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x", cwd=main)
    shutil.rmtree(project)
    _git("worktree", "add", "-q", str(project), cwd=main)


EVIL = "git init -q {evil} && git -C {evil} config core.fsmonitor 'touch pwned'"


@pytest.mark.parametrize(
    ("setup", "attack"),
    [
        (
            _init_repo,
            "mv .git .git-old && mkdir .git && cp -r .git-old/. .git/ && rm -rf .git/hooks .git/config",
        ),
        (
            _init_repo,
            "mv .git .git-old; rm -rf .git; "
            + EVIL.format(evil="evil")
            + " && echo 'gitdir: evil/.git' > .git",
        ),
        (_init_repo, EVIL.format(evil="../evil") + ' && echo "$PWD/../evil/.git" > .git/commondir'),
        (_init_worktree, EVIL.format(evil="evil") + " && echo 'gitdir: evil/.git' > .git"),
        (_init_worktree, "git config core.fsmonitor 'touch pwned'"),
    ],
    ids=["rename .git", ".git made a file", ".git/commondir", "worktree .git file", "worktree's config"],
)
@pytest.mark.parametrize("writable_git", [False, True], ids=["git read-only", "writable_git"])
async def test_workspace_write_leaves_no_git_config_of_the_commands_making(
    project: Path, setup: Callable[[Path], None], attack: str, writable_git: bool
) -> None:
    # The user's next git command in the project must not read a config the command wrote.
    await skip_unless_available("bwrap")
    setup(project)
    await run(
        f"{attack}; git config core.fsmonitor 'touch pwned'",
        ToolContext(project_root=project),
        SandboxPolicy(writable_git=writable_git),
        "bwrap",
    )
    assert _git("config", "--get", "core.fsmonitor", cwd=project) == ""


async def test_workspace_write_keeps_nestors_own_dirs_read_only_inside_the_project(project: Path) -> None:
    # A project holding nestor's data dir (a project at ~, or NESTOR_HOME in it): a command must
    # not add a folder to trusted-folders.json, nor write the user's config.
    await skip_unless_available("bwrap")
    data, config = project / "data", project / "config"
    data.mkdir()
    config.mkdir()
    policy = SandboxPolicy(kept_read_only=(data, config))
    command = 'echo \'{"folders": [{"path": "/"}]}\' > data/trusted-folders.json; echo x > config/config.toml'

    result = await run(command, ToolContext(project_root=project), policy, "bwrap")

    assert not (data / "trusted-folders.json").exists()
    assert not (config / "config.toml").exists()
    assert "Read-only file system" in result.content


async def test_workspace_write_network_follows_the_policy(
    backend: Backend, ctx: ToolContext, loopback_port: int
) -> None:
    allowed = await run(connect_command(loopback_port), ctx, SandboxPolicy(network=True), backend)
    assert allowed.content == "connected"
    if backend == "landlock" and abi_version() < LANDLOCK_NETWORK_ABI:
        pytest.skip(f"Landlock ABI {abi_version()} cannot restrict TCP (needs {LANDLOCK_NETWORK_ABI})")

    denied = await run(connect_command(loopback_port), ctx, SandboxPolicy(network=False), backend)

    assert "connected" not in denied.content
    assert denied.content.endswith("network access is blocked)")


async def test_mode_off_runs_unsandboxed(backend: Backend, ctx: ToolContext, tmp_path: Path) -> None:
    result = await run(f"echo x > {tmp_path}/free && echo ok", ctx, SandboxPolicy(mode="off"), backend)

    assert result.content == "ok"
    assert (tmp_path / "free").exists()


@pytest.fixture
def root_probe() -> Iterator[Path]:
    """A path at the root of the filesystem, removed afterwards if a test failed to block it."""
    probe = Path(f"/nestor-sandbox-probe-{uuid.uuid4().hex}")
    yield probe
    probe.unlink(missing_ok=True)


def exists(path: Path) -> bool:
    return path.exists()


async def test_root_cannot_remount_the_filesystem_writable(
    backend: Backend, ctx: ToolContext, root_probe: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root could remount")
    # Without --cap-drop ALL, root in bwrap's namespaces can make its bind of / writable.
    command = f"mount -o remount,bind,rw / 2>/dev/null; echo x > {root_probe}"

    result = await run(command, ctx, SandboxPolicy.read_only(), backend)

    assert not exists(root_probe)
    assert result.metadata["exit_code"] != 0


def marked_processes(marker: str) -> list[int]:
    """Pids whose command line contains ``marker`` (seen from outside any pid namespace)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
    return found


async def wait_for_marked(marker: str, count: int) -> list[int]:
    while len(pids := marked_processes(marker)) < count:  # noqa: ASYNC110 - /proc sends no event
        await asyncio.sleep(0.02)
    return pids


async def wait_until_gone(marker: str) -> list[int]:
    for _ in range(100):
        if not marked_processes(marker):
            return []
        await asyncio.sleep(0.02)
    return marked_processes(marker)


def sleepers(marker: str) -> str:
    # An unusual duration names the sleeps, so that /proc shows them whatever pid namespace they are in.
    return f"sleep 300.{marker} & sleep 300.{marker} & wait"


async def test_a_timeout_stops_every_sandboxed_process(backend: Backend, ctx: ToolContext) -> None:
    marker = str(uuid.uuid4().int)[:12]
    tool = BashTool(sandbox=SandboxPolicy(), backend=backend, kill_grace_seconds=0.5)
    call = asyncio.create_task(tool.run(BashParams(command=sleepers(marker), timeout=2), ctx))
    pids = await asyncio.wait_for(wait_for_marked(marker, 2), 10)

    result = await call

    assert result.metadata["timed_out"]
    try:
        assert await wait_until_gone(marker) == []
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_cancelling_stops_every_sandboxed_process(backend: Backend, ctx: ToolContext) -> None:
    marker = str(uuid.uuid4().int)[:12]
    tool = BashTool(sandbox=SandboxPolicy.read_only(), backend=backend, kill_grace_seconds=0.5)
    call = asyncio.create_task(tool.run(BashParams(command=sleepers(marker), timeout=60), ctx))
    pids = await asyncio.wait_for(wait_for_marked(marker, 2), 10)

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    try:
        assert await wait_until_gone(marker) == []
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_landlock_private_tmp_is_removed_after_the_command(ctx: ToolContext) -> None:
    await skip_unless_available("landlock")

    result = await run('echo "$TMPDIR"', ctx, SandboxPolicy.read_only(), "landlock")

    private = Path(result.content)
    assert private.name.startswith("nestor-sandbox-")
    assert not exists(private)


async def test_the_landlock_launcher_alone(tmp_path: Path) -> None:
    await skip_unless_available("landlock")
    launcher = Path(sys.modules[abi_version.__module__].__file__ or "")
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    allowed.mkdir()
    denied.mkdir()
    script = f"touch {allowed}/a && mkdir {allowed}/d && mv {allowed}/a {allowed}/d/b; touch {denied}/x"

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", str(launcher), "--rw", str(allowed), "--", "bash", "-c", script,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await process.communicate()

    assert (allowed / "d" / "b").exists()
    assert not (denied / "x").exists()
    assert b"Permission denied" in output
    assert process.returncode == 1


async def test_the_landlock_launcher_refuses_bad_arguments() -> None:
    launcher = Path(sys.modules[abi_version.__module__].__file__ or "")

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", str(launcher), "--bogus", "--", "true", stderr=asyncio.subprocess.PIPE
    )
    _, error = await process.communicate()

    assert process.returncode == EXIT_SANDBOX_FAILED
    assert b"unknown option '--bogus'" in error


def test_bwrap_always_drops_capabilities_and_shares_the_network_only_when_allowed(project: Path) -> None:
    closed = bwrap_argv(SandboxPolicy(network=False), project, ["true"])
    open_ = bwrap_argv(SandboxPolicy(network=True), project, ["true"])
    read_only = bwrap_argv(SandboxPolicy(mode="read-only", network=True), project, ["true"])

    for argv in (closed, open_, read_only):
        assert argv[1:5] == ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent"]
        assert argv[-2:] == ["--", "true"]
    assert "--share-net" in open_
    assert "--share-net" not in closed
    assert "--share-net" not in read_only


def test_a_repository_without_hooks_gets_an_empty_protected_hooks_dir(project: Path) -> None:
    protected = SandboxPolicy(writable_git=True).protected_paths(project)

    assert (project / ".git" / "hooks").is_dir()
    assert protected == (project / ".git" / "config", project / ".git" / "hooks")


def test_by_default_the_git_dir_is_protected_whole(project: Path) -> None:
    protected = SandboxPolicy().protected_paths(project)

    assert not (project / ".git" / "hooks").exists()
    assert protected == (project / ".git",)


def test_a_missing_bwrap_is_named() -> None:
    assert bwrap_problem("nestor-no-such-bwrap") == "bubblewrap is not installed"


def test_the_notices_say_what_is_not_enforced() -> None:
    none = Availability(None, 0, "bubblewrap is not installed").notice()
    old_landlock = Availability("landlock", 2, "bubblewrap is not installed").notice()

    assert none is not None and "commands run unsandboxed and only the permission rules apply" in none
    assert old_landlock is not None and "can write the project's .git" in old_landlock
    assert Availability("bwrap", 7).notice() is None
