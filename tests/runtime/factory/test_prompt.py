from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from nestor.runtime.factory.prompt import (
    EnvironmentCache,
    build_system_prompt,
    builtin_agent_prompt,
    environment_section,
    read_instructions,
    strip_front_matter,
)
from tests.hostile_repos import ATTACKS, Attack, build


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=cwd, check=True)


def test_builtin_coder_prompt_has_no_front_matter() -> None:
    prompt = builtin_agent_prompt("coder")
    assert not prompt.startswith("---")
    assert "You are nestor" in prompt


def test_strip_front_matter_leaves_plain_text_alone() -> None:
    assert strip_front_matter("---\nname: x\n---\nbody\n") == "body\n"
    assert strip_front_matter("no front matter") == "no front matter"


async def test_environment_outside_git(tmp_path: Path) -> None:
    text = await environment_section(tmp_path, now=datetime(2026, 11, 22))
    assert f"Working directory (project root): {tmp_path}" in text
    assert "Date: 2026-11-22 Sunday" in text
    assert "Git repository: no" in text


async def test_environment_shows_branch_and_status(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("a")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-qm", "one")
    clean = await environment_section(tmp_path)
    assert "branch trunk" in clean and "Git status: clean" in clean
    (tmp_path / "b.txt").write_text("b")
    dirty = await environment_section(tmp_path)
    assert "?? b.txt" in dirty


def test_instructions_from_user_and_project_in_order(tmp_path: Path) -> None:
    user = tmp_path / "user"
    project = tmp_path / "project"
    user.mkdir()
    project.mkdir()
    (user / "AGENTS.md").write_text("Prefer tabs.")
    (project / "AGENTS.md").write_text("Run make test.")
    (project / "CLAUDE.md").write_text("Use pytest.")
    (project / "NESTOR.md").write_text("   \n")  # empty files are skipped
    text = read_instructions(project, user)
    assert text.index("Prefer tabs.") < text.index("Run make test.") < text.index("Use pytest.")
    assert "NESTOR.md" not in text
    assert 'source="project instructions (CLAUDE.md)"' in text


def test_huge_instruction_file_is_cut(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("x" * 100_000)
    text = read_instructions(tmp_path, None)
    assert "cut at 40,000 bytes" in text and len(text) < 41_000


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md", "NESTOR.md"])
def test_an_instruction_file_linking_out_of_the_project_is_not_read(tmp_path: Path, name: str) -> None:
    # The finding: CLAUDE.md -> ~/.ssh/id_ed25519 put the key into the system prompt.
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- SECRET")
    project = tmp_path / "project"
    project.mkdir()
    (project / name).symlink_to(secret)
    text = read_instructions(project, None)
    assert "SECRET" not in text and "links outside the project" in text


def test_proc_environ_and_a_fifo_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").symlink_to("/proc/self/environ")
    os.mkfifo(tmp_path / "CLAUDE.md")  # opening it for reading would wait for a writer forever
    (tmp_path / "docs").mkdir()
    (tmp_path / "NESTOR.md").symlink_to(tmp_path / "docs")
    text = read_instructions(tmp_path, None)
    assert "not read: links outside the project" in text  # /proc is outside the project
    assert text.count("not a regular file") == 2


def test_a_link_inside_the_project_is_read(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "agents.md").write_text("Run make check.")
    (tmp_path / "AGENTS.md").symlink_to("docs/agents.md")
    assert "Run make check." in read_instructions(tmp_path, None)


async def test_system_prompt_joins_everything(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Always answer in French.")
    prompt = await build_system_prompt("AGENT PROMPT", tmp_path, user_config_dir=None)
    assert prompt.startswith("AGENT PROMPT")
    assert "<environment>" in prompt and "Always answer in French." in prompt


async def test_the_environment_cache_shares_a_recent_section_and_rebuilds_an_old_one(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("a")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-qm", "one")
    cache = EnvironmentCache(tmp_path, ttl_s=60)
    first = await cache.get()
    (tmp_path / "new.txt").write_text("n")
    assert await cache.get() is first  # within the ttl: no new git call, the old status
    cache.ttl_s = 0
    rebuilt = await cache.get()
    assert "?? new.txt" in rebuilt and "?? new.txt" not in first


async def test_git_status_runs_no_command_from_the_repositorys_own_config(tmp_path: Path) -> None:
    # A repository that arrives with its .git (an archive, a shared drive) brings its own config.
    marker = tmp_path / "pwned"
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    (repo / ".git" / "more.cfg").write_text(f'[filter "evil"]\n\tclean = sh -c "touch {marker}; cat"\n')
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    git(repo, "config", "include.path", "more.cfg")
    os.utime(repo / "a.txt", (1, 1))  # stat no longer matches the index: status must look at the content
    (repo / "a.txt").write_text("b\n")
    section = await environment_section(repo)
    assert not marker.exists()
    assert "M a.txt" in section


async def test_a_filter_whose_name_git_cannot_override_is_not_run_either(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "filter.a=b.clean", f"touch {marker}; cat")
    (tmp_path / ".gitattributes").write_text("* filter=a=b\n")
    (tmp_path / "x").write_text("x\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    marker.unlink(missing_ok=True)
    section = await environment_section(tmp_path)
    assert "Git status: clean" in section and not marker.exists()


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
async def test_the_environment_of_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, attack: Attack
) -> None:
    # Cases 2 and 3 of the second red team: a worktree config's filter and a submodule's own filter
    # ran at start-up, from the environment section's `git status`.
    directory, marker = build(attack, tmp_path)

    section = await environment_section(directory)

    assert not marker.exists(), marker.read_text()
    assert "Git repository: yes, branch main" in section or "Git repository: yes, branch wt" in section
    assert "M a.txt" in section or "M ../a.txt" in section


async def test_the_branch_of_a_new_or_detached_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    assert "Git repository: yes, branch trunk (no commits yet)" in await environment_section(tmp_path)
    (tmp_path / "x").write_text("x\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "x")
    git(tmp_path, "checkout", "-q", "--detach")
    assert "Git repository: yes, branch detached at " in await environment_section(tmp_path)
