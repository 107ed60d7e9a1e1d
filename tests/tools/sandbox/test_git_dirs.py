"""What a sandboxed command may do to the git dirs of the repositories holding the project.

Under bubblewrap every ``.git`` from the project root upwards, and the git dirs they lead to, are
read-only as a whole (``writable_git`` opens them but for config, hooks and pointers). Under
Landlock, which cannot keep a path beneath a writable one read-only, they are as writable as the
folder they lie in, and only the pointers a command plants are removed after it (SECURITY.md
says so): each test asserts what holds under each backend.
"""

from __future__ import annotations

from pathlib import Path

from nestor.tools.base import ToolContext
from nestor.tools.bash import BashParams, BashTool
from nestor.tools.sandbox.detect import Backend
from nestor.tools.sandbox.policy import SandboxPolicy
from tests.hostile_repos import committed_repo, git
from tests.tools.test_sandbox import backend, run

__all__ = ["backend"]  # the fixture, parametrized over bubblewrap and Landlock


def fsmonitor_of(repo: Path) -> str:
    return git(repo, "config", "--default", "", "--get", "core.fsmonitor").strip()


async def test_a_project_below_the_top_level_cannot_plant_a_hook_or_a_setting(
    backend: Backend, tmp_path: Path
) -> None:
    # Case 7 of the second red team: nestor started in repo/sub, the repository in a temp dir; the
    # command's hook and fsmonitor ran at the user's next `git commit`.
    repo = committed_repo(tmp_path / "repo")
    project = repo / "sub"
    project.mkdir()
    policy = SandboxPolicy(temp_dirs=(tmp_path,))
    command = "echo 'touch pwned' > ../.git/hooks/pre-commit; git config core.fsmonitor 'touch pwned'; "
    command += "echo ok > mine"

    result = await run(command, ToolContext(project_root=project), policy, backend)

    assert (project / "mine").read_text() == "ok\n"
    if backend == "bwrap":
        assert not (repo / ".git" / "hooks" / "pre-commit").exists()
        assert fsmonitor_of(repo) == ""
        assert "Read-only file system" in result.content
    else:  # Landlock: the temp dir holding the repository is writable, .git included
        assert (repo / ".git" / "hooks" / "pre-commit").exists()


async def test_a_commondir_cannot_be_left_behind(backend: Backend, tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    git(evil, "config", "core.fsmonitor", "touch pwned")
    command = (
        f"cp -r .git/objects .git/refs {evil}/; echo {evil} > .git/commondir; echo x > .git/config.worktree"
    )

    for writable_git in (False, True):
        policy = SandboxPolicy(temp_dirs=(tmp_path,), writable_git=writable_git)
        await run(command, ToolContext(project_root=repo), policy, backend)

        assert not (repo / ".git" / "commondir").exists()
        assert not (repo / ".git" / "config.worktree").exists()
        assert fsmonitor_of(repo) == ""


async def test_git_commands_that_change_the_repository_need_writable_git(
    backend: Backend, tmp_path: Path
) -> None:
    repo = committed_repo(tmp_path / "repo")
    (repo / "new.txt").write_text("new\n")
    commit = "git -c user.email=t@t -c user.name=t commit -qam x && git add new.txt && echo committed"

    kept = await run(commit, ToolContext(project_root=repo), SandboxPolicy(), backend)
    if backend == "bwrap":
        assert "committed" not in kept.content
        assert "the repository's .git is read-only to commands" in kept.content
        assert "[sandbox] writable_git = true" in kept.content

    opened = await run(commit, ToolContext(project_root=repo), SandboxPolicy(writable_git=True), backend)
    assert "committed" in opened.content or backend == "landlock"
    hooks = repo / ".git" / "hooks"
    written = await run(
        "echo 'touch pwned' > .git/hooks/post-commit",
        ToolContext(project_root=repo),
        SandboxPolicy(writable_git=True),
        backend,
    )
    if backend == "bwrap":
        assert not (hooks / "post-commit").exists()
        assert "Read-only file system" in written.content


async def test_the_superprojects_git_dir_is_protected_from_a_submodule(
    backend: Backend, tmp_path: Path
) -> None:
    inner = committed_repo(tmp_path / "inner")
    outer = committed_repo(tmp_path / "outer")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    project = outer / "sub"
    policy = SandboxPolicy(temp_dirs=(tmp_path,))

    await run(
        "git config core.fsmonitor 'touch pwned'; git -C .. config core.fsmonitor 'touch pwned'",
        ToolContext(project_root=project),
        policy,
        backend,
    )

    if backend == "bwrap":
        assert fsmonitor_of(project) == ""
        assert fsmonitor_of(outer) == ""


async def test_a_read_only_command_still_sees_the_repository_of_a_project_below_its_top(
    backend: Backend, tmp_path: Path
) -> None:
    # bubblewrap gives a read-only command a fresh /tmp: the project is shown again, and so are
    # the repository holding it and its git dir, so that `git log` works there.
    repo = committed_repo(tmp_path / "repo")
    project = repo / "sub"
    project.mkdir()

    result = await run(
        "git log --oneline | wc -l", ToolContext(project_root=project), SandboxPolicy.read_only(), backend
    )

    assert result.content == "1"


async def test_a_command_cannot_repoint_or_replace_a_submodules_git_file(
    backend: Backend, tmp_path: Path
) -> None:
    # The third red team: `echo 'gitdir: evil' > sub/.git`, and the user's next git status ran its config.
    inner = committed_repo(tmp_path / "inner")
    repo = committed_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(repo, "commit", "-qm", "sub")
    pointer = (repo / "sub" / ".git").read_text()
    tool = BashTool(sandbox=SandboxPolicy(temp_dirs=(tmp_path,)), backend=backend)
    attacks = (
        "echo 'gitdir: ../evil' > sub/.git",
        "rm -f sub/.git; echo 'gitdir: ../evil' > sub/.git",
        "mv sub sub-old; mkdir sub; echo 'gitdir: ../evil' > sub/.git",
    )
    for attack in attacks:
        await tool.run(BashParams(command=attack), ToolContext(project_root=repo))

        if backend == "bwrap":
            assert (repo / "sub" / ".git").read_text() == pointer, attack
    if backend == "landlock":  # SECURITY.md: Landlock leaves a project's .git files writable
        assert (repo / "sub" / ".git").exists()
