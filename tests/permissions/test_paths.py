"""File rules judge the real path: symlinks in the project are followed before matching."""

from __future__ import annotations

import os
from pathlib import Path

from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy
from nestor.permissions.paths import path_matches, shell_independent_realpath
from nestor.tools.base import ToolContext, path_permission


def write_request(path: Path, *, outside: bool) -> PermissionRequest:
    return PermissionRequest("edit", "write", str(path), f"Write {path}", outside_project=outside)


def test_an_in_repo_symlink_is_judged_by_its_target(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (elsewhere / ".bashrc").write_text("x\n")
    (project / "notes.txt").symlink_to(elsewhere / ".bashrc")
    (project / "real.txt").write_text("x\n")
    root = str(project)
    # The link itself, unresolved, as a tool that did not resolve it would send it.
    assert not path_matches("*.txt", str(project / "notes.txt"), root, bare_covers_outside=False)
    assert not path_matches(None, str(project / "notes.txt"), root, bare_covers_outside=False)
    assert path_matches("*.txt", str(project / "real.txt"), root, bare_covers_outside=False)


def test_the_outside_default_applies_to_a_symlink_target(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (project / "passwd.txt").symlink_to("/etc/passwd")
    policy = PermissionPolicy.from_config(["edit(*.txt)", "write"], [], [], project_root=str(project))
    assert policy.decide(write_request(project / "passwd.txt", outside=True)).kind == "ask"
    assert policy.decide(write_request(project / "a.txt", outside=False)).kind == "allow"


def test_a_symlinked_project_root_matches_its_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert path_matches("src/**", str(real / "src" / "a.py"), str(link), bare_covers_outside=False)
    assert path_matches(f"{link}/src/*", str(real / "src" / "a.py"), str(link), bare_covers_outside=False)


def test_patterns_leading_out_of_the_project_or_naming_a_directory_still_match(tmp_path: Path) -> None:
    # A deny rule the user wrote for a sibling directory, or for build/, matched nothing.
    project = tmp_path / "repo"
    (project / "build").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    root = str(project)
    policy = PermissionPolicy.from_config(
        ["write"], [], ["edit(../shared/**)", "write(build/)", "edit(src//gen/*)"], project_root=root
    )
    assert policy.decide(write_request(tmp_path / "shared" / "x.py", outside=True)).kind == "deny"
    assert (
        policy.decide(write_request(project / "sub" / ".." / ".." / "shared" / "y", outside=True)).kind
        == "deny"
    )
    assert policy.decide(write_request(project / "build" / "out.o", outside=False)).kind == "deny"
    assert policy.decide(write_request(project / "src" / "gen" / "a.py", outside=False)).kind == "deny"
    assert policy.decide(write_request(project / "src" / "a.py", outside=False)).kind == "allow"


def test_a_target_said_to_be_real_is_judged_as_given_and_file_tools_resolve_theirs(tmp_path: Path) -> None:
    # grep judges every file it found: resolving each again in every rule was most of its cost.
    project = tmp_path / "repo"
    project.mkdir()
    (tmp_path / "secret.env").write_text("KEY=1\n")
    (project / "notes.txt").symlink_to(tmp_path / "secret.env")
    root = str(project)
    link = str(project / "notes.txt")
    assert path_matches("*.txt", link, root, bare_covers_outside=False, target_is_real=True)
    assert not path_matches("*.txt", link, root, bare_covers_outside=False)

    request = path_permission("view", "read", "notes.txt", ToolContext(project_root=project))
    assert request is not None and request.target_is_real
    assert request.target == str(tmp_path / "secret.env")  # resolved by the tool, not the rules
    policy = PermissionPolicy.from_config([], [], ["view(*.txt)"], project_root=root)
    assert policy.decide(request).kind != "deny"
    denied = PermissionPolicy.from_config([], [], ["view(../secret.env)"], project_root=root)
    assert denied.decide(request).kind == "deny"


def test_a_path_through_a_process_folder_is_not_resolved_in_nestors_process(tmp_path: Path) -> None:
    (tmp_path / "here").symlink_to("/proc/self/cwd")
    (tmp_path / "fd").symlink_to("/dev/fd")
    (tmp_path / "loop").symlink_to("loop")
    for path in ("/proc/self/cwd/x", "/proc/thread-self", "/proc/12/root", "/dev/fd/3/x", "/dev/stdin"):
        assert shell_independent_realpath(path) is None, path
    for name in ("here/x", "fd/0", "loop/x"):
        assert shell_independent_realpath(str(tmp_path / name)) is None, name


def test_other_paths_resolve_as_realpath_does(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to("d")
    (tmp_path / "up").symlink_to("../" + tmp_path.name + "/d/")
    for name in ("d/x", "link/x", "link/../d", "up/y", "missing/../d/z", ".", "link"):
        path = str(tmp_path / name)
        assert shell_independent_realpath(path) == os.path.realpath(path), name
    assert shell_independent_realpath("/proc/cpuinfo") == "/proc/cpuinfo"
