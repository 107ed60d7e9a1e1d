"""The shadow repository: nestor's own git dir, which runs none of a repository's or a user's commands."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from nestor.checkpoints.recorder import ToolCall
from nestor.checkpoints.undo import apply_undo, plan_prompt_undo
from nestor.tools.git.shadow import ShadowRepository
from nestor.tools.sandbox.detect import Availability, detect_blocking
from nestor.tools.sandbox.landlock_exec import abi_version
from tests.checkpoints.support import files_of, open_project
from tests.hostile_repos import ATTACKS, Attack, build, committed_repo, git
from tests.tools.git.test_runner import NO_SANDBOX, install_spy_git


def fingerprint(git_dir: Path) -> dict[str, str]:
    """Every file of a git dir and a hash of its content: what must not change."""
    return {
        str(path.relative_to(git_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(git_dir.rglob("*"))
        if path.is_file()
    }


async def snapshot_change_and_undo(directory: Path, data_dir: Path, sandbox: Availability | None) -> None:
    """A prompt whose command changes ``a.txt`` and adds a file, then its undo."""
    project = open_project(directory, data_dir)
    project.recorder.shadow = ShadowRepository(data_dir, directory, sandbox=sandbox)
    try:
        top = Path(git(directory, "rev-parse", "--show-toplevel").strip())
        before = files_of(directory)
        seq = project.prompt("change")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        (top / "a.txt").write_text("changed by the agent\n")
        (directory / "added.txt").write_text("new\n")
        await project.recorder.finished("c1")
        plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
        await apply_undo(project.recorder, plan)
        after = files_of(directory)
    finally:
        project.close()
    assert after == before


LANDLOCK = Availability("landlock", abi_version(), "the test runs git under Landlock")


@pytest.mark.parametrize(
    "sandbox", [NO_SANDBOX, None, LANDLOCK], ids=["shadow alone", "shadow and sandbox", "shadow and Landlock"]
)
@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
async def test_no_command_of_the_repository_runs_for_snapshots_and_restores(
    tmp_path: Path, attack: Attack, sandbox: Availability | None
) -> None:
    if sandbox is LANDLOCK and abi_version() < 1:
        pytest.skip("no Landlock in this kernel")
    directory, marker = build(attack, tmp_path)
    git_dir = Path(git(directory, "rev-parse", "--absolute-git-dir").strip())
    before = fingerprint(git_dir)

    await snapshot_change_and_undo(directory, tmp_path / "data", sandbox)

    assert not marker.exists(), marker.read_text()
    assert fingerprint(git_dir) == before  # the user's index, HEAD, refs and config are untouched


async def test_the_users_own_git_config_and_its_filters_do_not_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's git-lfs (or any filter) would run on every snapshot of a file its attributes select.
    marker = tmp_path / "pwned"
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    filter_command = f"echo global >> {marker}; cat"
    (home / ".gitconfig").write_text(f'[filter "lfs"]\n\tclean = "{filter_command}"\n\trequired = true\n')
    (home / ".config" / "git" / "attributes").write_text("* filter=lfs\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    repo = committed_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("* filter=lfs\n")

    await snapshot_change_and_undo(repo, tmp_path / "data", None)

    assert not marker.exists()


def test_the_shadow_lives_under_the_data_dir_one_per_project(tmp_path: Path) -> None:
    one = ShadowRepository(tmp_path / "data", tmp_path / "one")
    assert one.git_dir.parent == (tmp_path / "data" / "checkpoints").resolve()
    assert one.git_dir != ShadowRepository(tmp_path / "data", tmp_path / "two").git_dir
    assert one.git_dir == ShadowRepository(tmp_path / "data", tmp_path / "one").git_dir


async def test_a_project_below_the_top_level_keeps_the_repositorys_ignore_rules(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "pkg" / "build").mkdir(parents=True)
    (repo / "pkg" / "b.txt").write_text("b\n")
    (repo / "other.txt").write_text("outside the project\n")
    project = open_project(repo / "pkg", tmp_path / "data")
    try:
        seq = project.prompt("change")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        (repo / "pkg" / "b.txt").write_text("changed\n")
        (repo / "pkg" / "debug.log").write_text("ignored\n")
        (repo / "pkg" / "build" / "out").write_text("ignored\n")
        (repo / "other.txt").write_text("changed outside the project\n")
        await project.recorder.finished("c1")
        rows = project.checkpoints.of_session(project.session_id)
        plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    finally:
        project.close()
    assert [change.path for row in rows for change in row.changes] == ["b.txt"]
    assert [file.path for file in plan.files] == ["b.txt"]


async def test_the_data_dir_inside_the_project_is_not_snapshotted(tmp_path: Path) -> None:
    project = open_project(tmp_path / "project", tmp_path / "project" / ".data")
    try:
        project.prompt("change")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        (project.root / "a.txt").write_text("a\n")
        await project.recorder.finished("c1")
        changed = [c.path for row in project.checkpoints.of_session(project.session_id) for c in row.changes]
    finally:
        project.close()
    assert changed == ["a.txt"]


async def test_a_nested_repository_is_skipped_and_named(tmp_path: Path) -> None:
    project = open_project(tmp_path / "project", tmp_path / "data")
    committed_repo(project.root / "vendor" / "lib")
    try:
        project.prompt("look")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        first = project.checkpoints.of_session(project.session_id)[0]
    finally:
        project.close()
    assert first.skipped == ("vendor/lib",)


async def test_the_shadow_git_writes_only_its_own_dir_offline_and_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if detect_blocking().backend is None:
        pytest.skip("no sandbox backend on this machine")
    repo = committed_repo(tmp_path / "repo")
    shadow = ShadowRepository(tmp_path / "data", repo)
    shadow.prepare()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        install_spy_git(tmp_path, monkeypatch, listener.getsockname()[1])
        from nestor.tools.git.runner import ShadowGit, run_shadow_git

        done = await run_shadow_git(ShadowGit(shadow.git_dir, repo, shadow.index_file("x")), "status")

    assert done is not None
    seen = done.stdout.decode()
    assert "GIT_CONFIG_GLOBAL=/dev/null" in seen and "GIT_CONFIG_NOSYSTEM=1" in seen
    assert "sk-secret" not in seen and "token-secret" not in seen and "GIT_CONFIG_PARAMETERS" not in seen
    assert "wrote the project" not in seen and "connected" not in seen
    assert not (repo / "written-by-git").exists() and not (tmp_path / "outside").exists()


async def test_a_config_written_into_the_shadow_between_snapshots_does_not_run(tmp_path: Path) -> None:
    # A data dir a command could write to (one under /tmp): its shadow's config lasts one snapshot at most.
    marker = tmp_path / "pwned"
    project = open_project(tmp_path / "project", tmp_path / "data")
    try:
        project.prompt("change")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        config = project.recorder.shadow.git_dir / "config"
        config.write_text(
            f'[core]\n\tfsmonitor = "echo fsmonitor >> {marker}; false"\n'
            f'[alias]\n\tnestor-snapshot = "!echo alias >> {marker}"\n'
        )
        (project.root / "a.txt").write_text("a\n")
        await project.recorder.finished("c1")
        changed = [c.path for row in project.checkpoints.of_session(project.session_id) for c in row.changes]
    finally:
        project.close()
    assert not marker.exists() and changed == ["a.txt"]
