"""In an untrusted repository, the git a command runs runs none of the repository's commands."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext
from nestor.tools.bash import BashParams, BashTool
from nestor.tools.git.neutralize import MAX_GIT_DIRS, neutral_value, neutralizing_environment
from nestor.tools.sandbox.policy import SandboxPolicy
from tests.hostile_repos import ATTACKS, Attack, build, git

COMMANDS = (
    "git status; git diff; git log -p -1 >/dev/null; git show --textconv HEAD:a.txt; git add -A; "
    "git diff --cached; git -c user.email=t@t -c user.name=t commit -qm x; git st; git submodule update; "
    "git fetch -q origin; true"
)
"""What an allowed git might be asked to do: every path by which a repository's config runs a command."""


def more_attacks(repo: Path, marker: Path) -> None:
    """Hooks in the git dir, an alias, a local remote's upload-pack and an `ext::` remote, on top."""
    hooks = Path(git(repo, "rev-parse", "--git-common-dir").strip(), "hooks")
    hooks = hooks if hooks.is_absolute() else repo / hooks
    hooks.mkdir(exist_ok=True)
    for name in ("pre-commit", "post-commit"):  # the hooks it arrived with (or its hooksPath's)
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / name).chmod(0o755)
    git(repo, "config", "alias.st", f"!touch {marker}")
    git(repo, "remote", "add", "origin", str(repo))
    git(repo, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
    git(repo, "config", "protocol.ext.allow", "always")
    git(repo, "remote", "add", "ext", f"ext::sh -c touch% {marker}")


async def run_git_commands(directory: Path, *, neutralize: bool) -> str:
    tool = BashTool(sandbox=SandboxPolicy(writable_git=True), neutralize_repository_git=neutralize)
    result = await tool.run(
        BashParams(command=COMMANDS + "; git fetch -q ext"), ToolContext(project_root=directory)
    )
    return result.content


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
async def test_a_command_in_an_untrusted_repository_runs_none_of_its_settings(
    tmp_path: Path, attack: Attack
) -> None:
    directory, marker = build(attack, tmp_path)
    more_attacks(Path(git(directory, "rev-parse", "--show-toplevel").strip()), marker)
    marker.unlink(missing_ok=True)

    output = await run_git_commands(directory, neutralize=True)

    assert not marker.exists(), output


async def test_in_a_trusted_repository_its_config_applies(tmp_path: Path) -> None:
    # What the neutralizing is for: the same commands run the repository's settings when trusted.
    directory, marker = build(ATTACKS["fsmonitor"], tmp_path)

    await run_git_commands(directory, neutralize=False)

    assert marker.exists()


async def test_the_users_own_settings_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory, _ = build(ATTACKS["clean filter"], tmp_path)
    (tmp_path / "global.cfg").write_text("[core]\n\tpager = less\n[alias]\n\tmine = status\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global.cfg"))

    env = await neutralizing_environment(directory)

    overridden = {env[f"GIT_CONFIG_KEY_{index}"] for index in range(int(env["GIT_CONFIG_COUNT"]))}
    assert "filter.evil.clean" in overridden and "diff.external" in overridden
    assert "core.pager" not in overridden and "alias.mine" not in overridden


def test_which_keys_are_neutralized() -> None:
    assert neutral_value("core.fsmonitor") == "false"
    assert neutral_value("filter.Evil.clean") == "cat"
    assert neutral_value("alias.st") == ""
    assert neutral_value("submodule.x.update") == "checkout"
    assert neutral_value("difftool.x.path") == "false"
    assert neutral_value("core.autocrlf") is None
    assert neutral_value("include.path") is None
    assert neutral_value("user.name") is None


async def test_a_repository_with_too_many_git_dirs_runs_no_command(tmp_path: Path) -> None:
    # Past the bound, a git dir's settings would go unlisted: the command is refused, in one line.
    directory, _ = build(ATTACKS["fsmonitor"], tmp_path)
    for index in range(MAX_GIT_DIRS):
        module = directory / ".git" / "modules" / f"m{index}"
        module.mkdir(parents=True)
        (module / "HEAD").write_text("ref: refs/heads/main\n")

    with pytest.raises(ToolError, match="more than 256 git dirs"):
        await neutralizing_environment(directory)


async def test_a_config_that_cannot_be_read_in_time_runs_no_command(tmp_path: Path) -> None:
    # An include naming a FIFO stalled the listing 10 s, then the command ran with that git dir's
    # settings not listed, so not turned off.
    directory = tmp_path / "repo"
    directory.mkdir()
    git(directory, "init", "-q")
    with (directory / ".git" / "config").open("a") as config:
        config.write('[filter "x"]\n\tclean = touch pwned\n[include]\n\tpath = ../stall\n')
    os.mkfifo(directory / "stall")

    started = time.monotonic()
    with pytest.raises(ToolError, match="could not be read in time"):
        await neutralizing_environment(directory)
    assert time.monotonic() - started < 5
