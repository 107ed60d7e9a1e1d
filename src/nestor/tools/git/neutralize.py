"""The git a command runs in an untrusted repository: the repository's command-naming settings neutralized.

A repository delivered with its ``.git`` can make an allowed, harmless-looking ``git status`` or
``git diff`` run a command of its own: ``core.fsmonitor``, a clean filter, a textconv,
``diff.external``, an alias, a hooks path. The sandbox bounds what such a command could do, but
the user allowed ``git status``, not the repository's script. So before a shell command runs in a
folder that is not trusted, every such setting of the repository (its own config, its worktree
config and includes, its submodules') is overridden through ``GIT_CONFIG_COUNT``, which git reads
above every config file (and passes on to the git it starts in a submodule), with a value that runs
nothing. The user's own (global, system) settings are left alone, and a trusted folder's config
applies as it is.

The configs are those of every git dir git may open from the repository: its own, those kept in
``modules/`` (of its git dir and of its common dir), and, recursively, those of the submodules its
index records (gitlinks) that are populated: a ``.git`` folder in the submodule's own folder (the
old layout) or a ``.git`` file naming a git dir anywhere, looked for under the folder holding
``.git`` and under the ``core.worktree`` its config names. Each git dir's keys are listed by
``git config`` itself pointed at that dir (``GIT_DIR``), so its ``commondir``, worktree config and
includes count as they will when the command runs. Past :data:`MAX_GIT_DIRS` git dirs the command
is not run: what is not listed cannot be overridden.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from nestor.core.errors import ToolError
from nestor.tools import fifo_stalls
from nestor.tools.git.location import GIT_DIR_NAME, Repository, find_repository, submodule_git_dirs
from nestor.tools.git.runner import gitlinks
from nestor.tools.programs import find_program

_LIST_TIMEOUT_S = 10.0
_UNLISTED = ToolError(
    "The command was not run: a git config of the repository could not be read in time (a FIFO or"
    " a stalled file among its includes), so its settings could not be turned off; trust the folder"
    " to run commands there."
)
MAX_GIT_DIRS = 256
"""The most git dirs (the repository's and its submodules', nested ones included) a command runs with."""
_NEUTRAL_BY_NAME = {
    "fsmonitor": "false",
    "hookspath": os.devnull,
    "pager": "cat",
    "clean": "cat",
    "smudge": "cat",
    "textconv": "cat",
    "process": "",
    "helper": "",
    "askpass": "",
    "gitproxy": "",
}
"""A key's last part and the value that runs nothing in its place; other command keys get ``false``."""

_COMMAND_NAMES = frozenset(
    {*_NEUTRAL_BY_NAME, "cmd", "command", "program", "driver", "editor", "sshcommand", "external",
     "alternaterefscommand", "path"}
)  # fmt: skip
_COMMAND_SECTIONS = frozenset({"alias", "pager"})
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})


def neutral_value(key: str) -> str | None:
    """The value overriding ``key`` (a config name as git lists it) when it can run a command, else None."""
    section, _, rest = key.partition(".")
    section, name = section.lower(), rest.rpartition(".")[2].lower()
    if section in _COMMAND_SECTIONS:
        return "" if section == "alias" else "cat"
    if section == "submodule" and name == "update":
        return "checkout"  # `!command` would run at `git submodule update`
    if name not in _COMMAND_NAMES or (name == "path" and section not in ("difftool", "mergetool", "man")):
        return None
    return _NEUTRAL_BY_NAME.get(name, "false")


async def neutralizing_environment(directory: Path) -> dict[str, str]:
    """``GIT_CONFIG_*`` variables neutralizing the repository's command settings; {} if none or no repo.

    Raises:
        ToolError: The repository and its submodules hold more than :data:`MAX_GIT_DIRS` git dirs.

    """
    repository = find_repository(directory)
    if repository is None:
        return {}
    git = find_program("git", outside=repository.work_tree)
    if git is None:
        return {}
    keys = await _reachable_keys(git, repository, directory)
    # The hooks a repository arrives with (.git/hooks) run without any setting naming them.
    keys |= {"core.hooksPath", "core.fsmonitor"}
    overrides = sorted((key, value) for key in keys if (value := neutral_value(key)) is not None)
    # Local remotes run the repository's `uploadpack` (a list: no override replaces it) and `ext::`
    # remotes a command of its own: only network transports are allowed, whatever its config says.
    env = {"GIT_ALLOW_PROTOCOL": "https:http:ssh:git", "GIT_CONFIG_COUNT": str(len(overrides))}
    for index, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


async def _reachable_keys(git: str, root: Repository, directory: Path) -> set[str]:
    """The config keys of every git dir git may open from ``root`` (see the module's docstring)."""
    worktrees: dict[Path, str | None] = {}  # each git dir listed, and the core.worktree it names
    walked: set[Path] = set()
    keys: set[str] = set()

    def count(seen: set[Path] | dict[Path, str | None]) -> None:
        if len(seen) >= MAX_GIT_DIRS:
            raise ToolError(
                f"The command was not run: the repository and its submodules hold more than {MAX_GIT_DIRS}"
                " git dirs, too many to turn off their settings; trust the folder to run commands there."
            )

    async def list_keys(git_dir: Path, cwd: Path, *, discovered: bool = False) -> str | None:
        if git_dir not in worktrees:
            count(worktrees)
            # The project's own git is found from the directory, as the command's git finds it.
            entries = await _repository_entries(git, cwd, None if discovered else git_dir)
            keys.update(key for key, _ in entries)
            worktrees[git_dir] = next((value for key, value in entries if key == "core.worktree"), None)
        return worktrees[git_dir]

    pending = [root]
    while pending:
        repository = pending.pop()
        if repository.work_tree in walked:
            continue
        count(walked)
        walked.add(repository.work_tree)
        is_root = repository is root
        worktree = await list_keys(
            repository.git_dir, directory if is_root else repository.git_dir, discovered=is_root
        )
        for modules_of in dict.fromkeys((repository.git_dir, repository.common_dir)):
            for git_dir in submodule_git_dirs(modules_of):
                await list_keys(git_dir.resolve(), git_dir)
        # A submodule is looked for where git looks: under the work tree core.worktree names, if any.
        bases = dict.fromkeys((repository.work_tree, *((repository.git_dir / worktree,) if worktree else ())))
        for name in await gitlinks(repository):
            pending += [submodule for base in bases if (submodule := _populated(base / name)) is not None]
    return keys


def _populated(tree: Path) -> Repository | None:
    """The repository whose ``.git`` (folder or file) is in ``tree`` itself, None if there is none."""
    if not os.path.lexists(tree / GIT_DIR_NAME):
        return None
    repository = find_repository(tree)
    return repository if repository is not None and repository.work_tree == tree.resolve() else None


async def _repository_entries(git: str, cwd: Path, git_dir: Path | None) -> list[tuple[str, str]]:
    """A repository's own config entries (key, value): local and worktree scopes, includes followed."""
    listed = await _git_config(git, cwd, git_dir, "--list", "--show-scope", "-z")
    # With -z, each entry is its scope ended by a NUL, then its name, a newline and its value
    # (no newline for a key without a value), ended by a NUL. git writes the section and the name
    # in lower case and keeps the subsection's case, which an override must match
    # (filter.Evil.clean is not filter.evil.clean).
    entries: list[tuple[str, str]] = []
    for scope, entry in zip(listed[::2], listed[1::2], strict=False):
        if scope in _REPOSITORY_SCOPES:
            key, _, value = entry.partition("\n")
            entries.append((key, value))
    return entries


async def _git_config(git: str, cwd: Path, git_dir: Path | None, *args: str) -> list[str]:
    """``git config ARGS`` (which reads files and runs nothing), with none of the user's config or secrets."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    try:
        process = await asyncio.create_subprocess_exec(
            git, "config", *args,
            cwd=cwd, env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
    except OSError:
        return []
    talk = asyncio.ensure_future(process.communicate())
    watcher = asyncio.ensure_future(fifo_stalls.watch(process, group=False))
    try:
        await asyncio.wait({talk, watcher}, timeout=_LIST_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        if watcher.done() and watcher.exception() is None:  # it ended: its output may still be coming
            await asyncio.wait({talk}, timeout=_LIST_TIMEOUT_S)
    finally:
        watcher.cancel()
        if process.returncode is None:
            process.kill()
        if not talk.done():
            await asyncio.wait({talk})
    if (
        talk.cancelled()
        or talk.exception() is not None
        or process.returncode is None
        or process.returncode < 0
    ):
        raise _UNLISTED  # stopped (a FIFO, the time limit): its keys are unknown, so nothing runs
    stdout, _ = talk.result()
    return stdout.decode("utf-8", errors="replace").split("\0")[:-1]
