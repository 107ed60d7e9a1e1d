"""nestor's own git: the one way nestor runs git for itself, which runs none of a repository's commands.

A repository that arrives with its ``.git`` (an archive, a copied folder) brings its own config:
``core.fsmonitor``, ``filter.*.clean``, ``core.hooksPath``, aliases, includes, a worktree config,
a ``commondir`` naming yet another config, submodules with configs of their own. Overriding
each key that names a command means knowing every one, in every scope, at the moment git reads
it. So nestor never lets git read a repository's config at all: each run gets a *view*, a
private git dir of nestor's own holding a minimal config, ``HEAD`` (resolved by
:mod:`~nestor.tools.git.location`, by reading files) and ``info/exclude``, and git is pointed at
the repository's index and objects by environment variables (``GIT_INDEX_FILE``,
``GIT_OBJECT_DIRECTORY``). Only data is read from the repository; its config, hooks and
attributes-selected filters have nothing to run. Submodules are not entered.

As a second layer, git runs in the read-only, offline sandbox (bubblewrap, else Landlock), with
an environment of a few variables (no API keys, no tokens), and is found on ``PATH`` outside the
repository (a ``git`` in the project's ``.venv/bin`` or ``node_modules/.bin`` is not run).

The user's own git config (``~/.gitconfig``, the system's) still applies: it is not the
repository's, and its ignore rules matter to a listing.

A shadow repository (:func:`run_shadow_git`, for checkpoints) goes the same way with a git dir of
nestor's own under the data dir as its only writable path, and without the user's config either.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nestor.core.files import read_bounded_text
from nestor.tools import fifo_stalls
from nestor.tools.git.location import Repository, find_repository
from nestor.tools.programs import find_program
from nestor.tools.sandbox.detect import Availability, detect, detect_blocking
from nestor.tools.sandbox.launch import Launch, SandboxError, sandboxed
from nestor.tools.sandbox.policy import SandboxPolicy

GIT_TIMEOUT_S = 10.0
"""A listing or status that takes longer is stopped and treated as unavailable (a status of a large
repository takes about a second here; a FIFO planted where git expects a file blocks it forever)."""

_KEPT_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "XDG_CONFIG_HOME")
_MAX_EXCLUDE_BYTES = 1_000_000


@dataclass(frozen=True, slots=True)
class GitOutput:
    """What one run of nestor's git printed.

    Attributes:
        returncode: git's exit status.
        stdout: Its standard output, as bytes (``-z`` listings are split by the caller).
        stderr: Its standard error (why it failed).

    """

    returncode: int
    stdout: bytes
    stderr: bytes = b""

    @property
    def ok(self) -> bool:
        """Whether git exited with 0."""
        return self.returncode == 0


def run_git(
    directory: Path,
    *args: str,
    timeout: float = GIT_TIMEOUT_S,
    sandbox: Availability | None = None,
    stdin: bytes | None = None,
) -> GitOutput | None:
    """Run ``git ARGS`` for the repository holding ``directory``, from there; None if none or no git.

    ``sandbox`` is the backend to run it under (None: what this machine has); ``stdin`` is what git
    reads (``--stdin`` lists), else nothing. Blocking: call it from a thread (the tools' listings run
    in ``asyncio.to_thread``).
    """
    prepared = prepare_repository(directory)
    if prepared is None:
        return None
    git, repository = prepared
    availability = sandbox or detect_blocking()
    with private_view(repository) as (view, git_env):
        shown = (repository.work_tree, repository.git_dir, repository.common_dir, view)
        command = [git, "-C", str(directory), *args]
        launch = sandboxed_launch(availability, repository.work_tree, shown, command)
        if launch is None:
            return None
        return _run_blocking(launch, directory, git_environment(git_env, launch.env), timeout, stdin)


async def run_git_async(
    directory: Path, *args: str, timeout: float = GIT_TIMEOUT_S, sandbox: Availability | None = None
) -> GitOutput | None:
    """:func:`run_git` for the event loop: the same view, sandbox and environment."""
    prepared = prepare_repository(directory)
    if prepared is None:
        return None
    git, repository = prepared
    availability = sandbox or await detect()
    with private_view(repository) as (view, git_env):
        shown = (repository.work_tree, repository.git_dir, repository.common_dir, view)
        command = [git, "-C", str(directory), *args]
        launch = sandboxed_launch(availability, repository.work_tree, shown, command)
        if launch is None:
            return None
        return await run_launch(launch, directory, git_environment(git_env, launch.env), timeout, None)


@dataclass(frozen=True, slots=True)
class ShadowGit:
    """Where a shadow repository's git runs: nestor's own git dir, the project as work tree, an index.

    A shadow repository (:mod:`nestor.checkpoints`) keeps snapshots of a project's files in a git
    dir of nestor's own under the data dir: the project's repository (its index, HEAD, refs,
    config) is never touched, and none of its commands can run, as with :func:`run_git`.

    Attributes:
        git_dir: The shadow's git dir, written by nestor alone (its config names no command).
        work_tree: The directory whose files are snapshotted (the top of the project's repository,
            or the project itself outside one), read-only to git.
        index_file: The index this run reads and writes (one per session tree).

    """

    git_dir: Path
    work_tree: Path
    index_file: Path


async def run_shadow_git(
    shadow: ShadowGit,
    *args: str,
    stdin: bytes | None = None,
    timeout: float = GIT_TIMEOUT_S,
    sandbox: Availability | None = None,
) -> GitOutput | None:
    """Run ``git ARGS`` on a shadow repository, from its work tree; None when git cannot run.

    The same git (found outside the project), the same few variables of the user's environment
    and the same offline sandbox as :func:`run_git`, with the shadow's git dir as the only
    writable path: git reads the project and writes only nestor's own files. No config but the
    shadow's own applies: neither the user's global or system config (a git-lfs filter would run
    on every snapshot) nor any of the repository's. Pathspecs are literal.
    """
    git = find_program("git", outside=shadow.work_tree)
    if git is None:
        return None
    availability = sandbox or await detect()
    git_env = {
        "GIT_DIR": str(shadow.git_dir),
        "GIT_WORK_TREE": str(shadow.work_tree),
        "GIT_INDEX_FILE": str(shadow.index_file),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_LITERAL_PATHSPECS": "1",
    }
    launch = sandboxed_launch(
        availability,
        shadow.work_tree,
        (shadow.work_tree,),
        [git, *args],
        own_dirs=(shadow.git_dir,),
    )
    if launch is None:
        return None
    return await run_launch(launch, shadow.work_tree, git_environment(git_env, launch.env), timeout, stdin)


def _run_blocking(
    launch: Launch, cwd: Path, env: dict[str, str], timeout: float, stdin: bytes | None
) -> GitOutput | None:
    """Run it, stopping it at ``timeout`` or as soon as it is stuck opening a FIFO."""
    try:
        process = subprocess.Popen(
            launch.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=launch.preexec,
            pass_fds=launch.pass_fds,
        )
    except (OSError, subprocess.SubprocessError):
        launch.cleanup()
        return None
    deadline = time.monotonic() + timeout
    strikes = 0
    try:
        while True:
            try:
                stdout, stderr = process.communicate(stdin, timeout=fifo_stalls.POLL_S)
                break
            except subprocess.TimeoutExpired:
                stdin = None  # already written
                strikes = fifo_stalls.stalled(process.pid, strikes, group=True)
                if strikes >= fifo_stalls.STRIKES or time.monotonic() > deadline:
                    _kill_group(process.pid)
                    process.communicate()
                    return None
    finally:
        launch.cleanup()
    return GitOutput(process.returncode, stdout, stderr)


async def run_launch(
    launch: Launch, cwd: Path, env: dict[str, str], timeout: float, stdin: bytes | None
) -> GitOutput | None:
    """Run it, stopping it at ``timeout`` or as soon as it is stuck opening a FIFO."""
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=launch.preexec,
            pass_fds=launch.pass_fds,
        )
    except (OSError, subprocess.SubprocessError):
        launch.cleanup()
        return None
    talk = asyncio.ensure_future(process.communicate(stdin))
    watcher = asyncio.ensure_future(fifo_stalls.watch(process, group=True))
    try:
        await asyncio.wait({talk, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if watcher.done() and watcher.exception() is None:  # it ended: its output may still be coming
            await asyncio.wait({talk}, timeout=timeout)
        if not talk.done():
            _kill_group(process.pid)
            await asyncio.wait({talk})
            return None
        stdout, stderr = talk.result()
    finally:
        if process.returncode is None:  # cancelled, or stopped above
            _kill_group(process.pid)
        watcher.cancel()
        if not talk.done():
            talk.cancel()
        launch.cleanup()
    return GitOutput(process.returncode or 0, stdout, stderr)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


_gitlinks_seen: dict[tuple[Path, int, int], tuple[str, ...]] = {}
_MAX_INDEXES_SEEN = 64


async def gitlinks(repository: Repository) -> tuple[str, ...]:
    """The paths (from its work tree's top) of the submodules (gitlinks) a repository's index records.

    What a ``git status`` there recurses into, where populated. Kept per index (path, size, mtime):
    the index changes only when the user's own git writes it (commands cannot, their ``.git``
    being read-only). An index that cannot be read records none, and is read again next time.
    """
    try:
        index = repository.index_file.stat()
    except OSError:
        return ()
    key = (repository.index_file, index.st_size, index.st_mtime_ns)
    if key not in _gitlinks_seen:
        done = await run_git_async(repository.work_tree, "ls-files", "--stage", "-z")
        if done is None or not done.ok:
            return ()
        names: list[str] = []
        for entry in done.stdout.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if meta.startswith(b"160000 "):
                names.append(os.fsdecode(name))
        if len(_gitlinks_seen) >= _MAX_INDEXES_SEEN:
            _gitlinks_seen.clear()
        _gitlinks_seen[key] = tuple(names)
    return _gitlinks_seen[key]


async def submodule_trees(directory: Path) -> tuple[Path, ...]:
    """The work trees of the submodules (gitlinks) the index of the repository holding ``directory`` has."""
    repository = find_repository(directory)
    if repository is None:
        return ()
    return tuple(repository.work_tree / name for name in await gitlinks(repository))


def prepare_repository(directory: Path) -> tuple[str, Repository] | None:
    """The git program and the repository around ``directory``; None when either is missing."""
    repository = find_repository(directory)
    if repository is None:
        return None
    git = find_program("git", outside=repository.work_tree)
    return (git, repository) if git is not None else None


@contextmanager
def private_view(
    repository: Repository, *, scratch: bool = False, refs: Mapping[str, str] | None = None
) -> Iterator[tuple[Path, dict[str, str]]]:
    """A private git dir for one run, and the variables that point git at it and at the data.

    ``scratch`` gives the view an index and an object store of its own (empty; the repository's
    objects as an alternate), for commands that write them (``add``, ``read-tree``) while the
    repository stays as it is; ``refs`` are branches the view holds besides ``HEAD``'s (name to id).
    """
    view = Path(tempfile.mkdtemp(prefix="nestor-git-"))
    try:
        head = repository.head()
        (view / "refs").mkdir()
        if head.ref is not None:
            (view / "HEAD").write_text(f"ref: {head.ref}\n")
            if head.commit is not None:
                ref_file = view / head.ref
                ref_file.parent.mkdir(parents=True, exist_ok=True)
                ref_file.write_text(f"{head.commit}\n")
        else:
            (view / "HEAD").write_text(f"{head.commit}\n" if head.commit else "ref: refs/heads/main\n")
        (view / "config").write_text(_config(head.commit))
        (view / "info").mkdir()
        (view / "info" / "exclude").write_text(_exclude_rules(repository))
        _link_shared_indexes(repository, view)
        for name, object_id in (refs or {}).items():
            (view / "refs" / "heads").mkdir(exist_ok=True)
            (view / "refs" / "heads" / name).write_text(f"{object_id}\n")
        env = {
            "GIT_DIR": str(view),
            "GIT_WORK_TREE": str(repository.work_tree),
            "GIT_INDEX_FILE": str(_readable_index(repository, view)),
            "GIT_OBJECT_DIRECTORY": str(repository.objects_dir),
        }
        if scratch:
            (view / "objects").mkdir()
            env |= {
                "GIT_INDEX_FILE": str(view / "index"),
                "GIT_OBJECT_DIRECTORY": str(view / "objects"),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": _c_quoted(str(repository.objects_dir)),
            }
        yield view, env
    finally:
        shutil.rmtree(view, ignore_errors=True)


def _c_quoted(path: str) -> str:
    """A path as one entry of git's ``:``-separated list variables: C-quoted, a ``:`` in it kept."""
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _readable_index(repository: Repository, view: Path) -> Path:
    """The repository's index, or none (a path in the view) when it is not a regular file.

    A FIFO there would block git until the run's time limit; git reads a missing index as empty.
    """
    try:
        mode = repository.index_file.lstat().st_mode
    except OSError:
        return repository.index_file
    return repository.index_file if stat.S_ISREG(mode) else view / "index"


def _config(commit: str | None) -> str:
    """The view's whole config: the format the objects need, and nothing that names a command."""
    lines = ["[core]", "\tbare = false", "\tfsmonitor = false", "\tuntrackedCache = false"]
    if commit is not None and len(commit) == 64:
        lines[1:1] = ["\trepositoryformatversion = 1"]
        lines += ["[extensions]", "\tobjectformat = sha256"]
    else:
        lines[1:1] = ["\trepositoryformatversion = 0"]
    return "\n".join(lines) + "\n"


def _exclude_rules(repository: Repository) -> str:
    """The repository's ``info/exclude`` (ignore patterns: data), when it is a regular file."""
    try:
        return read_bounded_text(
            repository.common_dir / "info" / "exclude", limit_bytes=_MAX_EXCLUDE_BYTES
        ).text
    except OSError:  # UnsafeFileError (a link, a FIFO) included
        return ""


def _link_shared_indexes(repository: Repository, view: Path) -> None:
    """A split index keeps its base in ``sharedindex.*`` beside it, where git looks in ``GIT_DIR``."""
    try:
        shared = [path for path in repository.git_dir.iterdir() if path.name.startswith("sharedindex.")]
    except OSError:
        return
    for path in shared:
        os.symlink(path, view / path.name)


def sandboxed_launch(
    availability: Availability,
    root: Path,
    shown: tuple[Path, ...],
    argv: list[str],
    *,
    own_dirs: tuple[Path, ...] = (),
) -> Launch | None:
    """Git's argv in the read-only, offline sandbox that shows ``shown`` and git, and writes ``own_dirs``."""
    git_home = Path(argv[0]).resolve().parent
    visible = tuple(dict.fromkeys((*shown, git_home)))
    try:
        return sandboxed(
            availability.backend,
            SandboxPolicy.read_only(own_dirs=own_dirs),
            root,
            argv,
            landlock_abi=availability.landlock_abi,
            visible=visible,
        )
    except SandboxError:
        return None


def git_environment(git_env: Mapping[str, str], sandbox_env: Mapping[str, str]) -> dict[str, str]:
    """A few of the user's variables (no keys, no tokens, no ``GIT_*``), then git's and the sandbox's."""
    kept = {
        name: value for name, value in os.environ.items() if name in _KEPT_VARIABLES or name.startswith("LC_")
    }
    return kept | {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"} | dict(git_env) | dict(sandbox_env)
