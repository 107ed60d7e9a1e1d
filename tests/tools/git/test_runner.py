"""nestor's own git runs none of a repository's commands, with the sandbox and without it."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from nestor.tools.git.location import Repository
from nestor.tools.git.runner import gitlinks, run_git, run_git_async, submodule_trees
from nestor.tools.sandbox.detect import Availability, detect_blocking
from tests.hostile_repos import ATTACKS, Attack, build, committed_repo, git, touch_content

NO_SANDBOX = Availability(None, 0, "the test runs git unsandboxed, to check the view alone")


def listed(directory: Path, sandbox: Availability | None = None) -> list[str]:
    done = run_git(directory, "ls-files", "-z", "--cached", "--others", "--exclude-standard", sandbox=sandbox)
    assert done is not None and done.ok
    return sorted(name.decode() for name in done.stdout.split(b"\0") if name)


def status(directory: Path, sandbox: Availability | None = None) -> str:
    done = run_git(directory, "status", "--short", "--ignore-submodules=all", sandbox=sandbox)
    assert done is not None and done.ok
    return done.stdout.decode()


@pytest.mark.parametrize("sandbox", [NO_SANDBOX, None], ids=["view alone", "view and sandbox"])
@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_no_command_of_the_repository_runs(
    tmp_path: Path, attack: Attack, sandbox: Availability | None
) -> None:
    directory, marker = build(attack, tmp_path)

    files = listed(directory, sandbox)
    changes = status(directory, sandbox)

    assert not marker.exists(), marker.read_text()
    assert files and all(not name.startswith("..") for name in files)
    assert "a.txt" in changes


def test_the_listing_and_status_are_gits_own(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("ignored.txt\nbuild/\n")
    (repo / "ignored.txt").write_text("x\n")
    (repo / "new.txt").write_text("x\n")
    (repo / "build").mkdir()
    (repo / "build" / "out").write_text("x\n")
    (repo / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    (repo / "excluded.txt").write_text("x\n")
    touch_content(repo)

    assert listed(repo) == [".gitattributes", ".gitignore", "a.txt", "new.txt"]
    assert status(repo) == " M a.txt\n?? .gitignore\n?? new.txt\n"
    assert status(repo) == git(repo, "status", "--short")


def test_a_folder_below_the_top_level_lists_relative_to_itself(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "b.txt").write_text("b\n")

    assert listed(repo / "pkg") == ["b.txt"]


def test_a_repository_with_no_commit_a_detached_head_and_a_packed_ref(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "x").write_text("x\n")
    assert status(empty) == "?? x\n"

    repo = committed_repo(tmp_path / "repo")
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    touch_content(repo)
    assert status(repo) == " M a.txt\n"
    git(repo, "checkout", "-q", "--detach")
    assert status(repo) == " M a.txt\n"


def test_a_sha256_repository_and_a_split_index(tmp_path: Path) -> None:
    sha256 = tmp_path / "sha256"
    sha256.mkdir()
    git(sha256, "init", "-q", "--object-format=sha256")
    (sha256 / "a.txt").write_text("a\n")
    git(sha256, "add", ".")
    git(sha256, "commit", "-qm", "init")
    touch_content(sha256)
    assert status(sha256) == " M a.txt\n"

    split = committed_repo(tmp_path / "split")
    git(split, "update-index", "--split-index")
    (split / "new.txt").write_text("x\n")
    git(split, "add", "new.txt")
    assert any(path.name.startswith("sharedindex.") for path in (split / ".git").iterdir())
    assert status(split) == "A  new.txt\n"


def test_outside_a_repository_there_is_nothing_to_run(tmp_path: Path) -> None:
    assert run_git(tmp_path, "status") is None


def test_a_git_inside_the_repository_on_path_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = committed_repo(tmp_path / "repo")
    marker = tmp_path / "pwned"
    planted = repo / ".venv" / "bin"
    planted.mkdir(parents=True)
    (planted / "git").write_text(f"#!/bin/sh\necho planted >> {marker}\n")
    (planted / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}.{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(planted)

    assert "a.txt" in listed(repo)
    assert not marker.exists()


def install_spy_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    """A ``git`` first on PATH (outside any repository) that reports what it sees and can reach."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    spy = bin_dir / "git"
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 1); print('connected')"
    spy.write_text(
        "#!/bin/sh\n"
        'env\necho "args: $*"\n'
        'touch "$GIT_WORK_TREE/written-by-git" 2>/dev/null && echo "wrote the project"\n'
        f'touch "{tmp_path}/outside" 2>/dev/null && echo "wrote outside"\n'
        f'python3 -c "{connect}" 2>/dev/null\n'
    )
    spy.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("SECRET_TOKEN", "token-secret")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=touch /tmp/x'")


def test_git_runs_read_only_offline_and_without_the_users_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if detect_blocking().backend is None:
        pytest.skip("no sandbox backend on this machine")
    repo = committed_repo(tmp_path / "repo")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        install_spy_git(tmp_path, monkeypatch, listener.getsockname()[1])

        done = run_git(repo, "status")

    assert done is not None
    seen = done.stdout.decode()
    assert "args: -C" in seen
    assert "sk-secret" not in seen and "token-secret" not in seen and "GIT_CONFIG_PARAMETERS" not in seen
    assert "wrote the project" not in seen and "connected" not in seen
    assert not (repo / "written-by-git").exists() and not (tmp_path / "outside").exists()


async def test_the_async_runner_is_the_same(tmp_path: Path) -> None:
    directory, marker = build(ATTACKS["fsmonitor"], tmp_path)

    done = await run_git_async(directory, "status", "--short")

    assert done is not None and done.stdout.decode() == " M a.txt\n"
    assert not marker.exists()


async def test_a_commondir_planted_while_a_command_runs_is_not_read(tmp_path: Path) -> None:
    # Case 6: a command (here, the test) plants .git/commondir while nestor's git lists files.
    repo = committed_repo(tmp_path / "repo")
    directory, marker = build(ATTACKS["commondir"], tmp_path / "attack")
    planted = (directory / ".git" / "commondir").read_text()
    (directory / ".git" / "commondir").unlink()

    async def plant() -> None:
        await asyncio.sleep(0.01)
        (repo / ".git" / "commondir").write_text(planted)

    results = await asyncio.gather(plant(), *(run_git_async(repo, "status", "--short") for _ in range(5)))

    assert all(done is not None for done in results[1:])
    assert not marker.exists()
    (repo / ".git" / "commondir").unlink()


async def test_the_submodules_of_the_whole_repository_are_found_from_a_folder_of_it(tmp_path: Path) -> None:
    # git status recurses into every submodule of the repository, wherever it is run from.
    directory, _ = build(ATTACKS["nested submodules"], tmp_path)
    (directory / "pkg").mkdir()

    trees = await submodule_trees(directory / "pkg")

    assert trees == (directory.resolve() / "sub",)
    assert await gitlinks(Repository(directory / "sub", directory / "sub/.git", directory / "sub/.git")) == (
        "deep/inner",
    )
