"""The git a command runs in an untrusted repository: the repository's command-naming settings neutralized.

A repository delivered with its ``.git`` can make an allowed, harmless-looking ``git status`` or
``git diff`` run a command of its own: ``core.fsmonitor``, a clean filter, a textconv,
``diff.external``, an alias, a hooks path. The sandbox bounds what such a command could do, but
the user allowed ``git status``, not the repository's script. So before a shell command runs in a
folder that is not trusted, every such setting of the repository (its own config, its worktree
config and includes, its submodules') is overridden through ``GIT_CONFIG_COUNT``, which git reads
above every config file, with a value that runs nothing. The user's own (global, system) settings
are left alone, and a trusted folder's config applies as it is.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from nestor.tools.git.location import find_repository, submodule_git_dirs
from nestor.tools.programs import find_program

_LIST_TIMEOUT_S = 10.0
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
    """``GIT_CONFIG_*`` variables neutralizing the repository's command settings; {} if none or no repo."""
    repository = find_repository(directory)
    if repository is None:
        return {}
    git = find_program("git", outside=repository.work_tree)
    if git is None:
        return {}
    keys = await _repository_keys(git, directory)
    for git_dir in submodule_git_dirs(repository.common_dir):
        keys |= await _file_keys(git, git_dir / "config")
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


async def _repository_keys(git: str, directory: Path) -> set[str]:
    listed = await _git_config(git, directory, "--list", "--show-scope", "--name-only", "-z")
    # With -z, each entry is its scope and its name, each ended by a NUL.
    return {
        key.lower()
        for scope, key in zip(listed[::2], listed[1::2], strict=False)
        if scope in _REPOSITORY_SCOPES
    }


async def _file_keys(git: str, config: Path) -> set[str]:
    listed = await _git_config(
        git, config.parent, "--file", str(config), "--includes", "--list", "--name-only", "-z"
    )
    return set(listed)


async def _git_config(git: str, cwd: Path, *args: str) -> list[str]:
    """``git config ARGS`` (which reads files and runs nothing), with none of the user's config or secrets."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
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
    try:
        stdout, _ = await asyncio.wait_for(process.communicate(), _LIST_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return []
    return stdout.decode("utf-8", errors="replace").split("\0")[:-1]
