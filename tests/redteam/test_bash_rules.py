"""Bash lines a user's rules judge wrongly: commands, reads and writes the parser never saw.

SECURITY.md, "Permission rules": an allow rule covers a line only if it covers each simple command;
a deny rule applies to any, and holds under ``--yolo``; a line that cannot be judged is never
covered by an allow rule and is refused under a deny rule with a pattern; a redirection is judged as
the file it opens, and a read or write rule that denies it holds for the line; setting ``PATH``,
``GIT_CONFIG_*`` "or the like" makes a line unjudgeable.
"""

from __future__ import annotations

from pathlib import Path

from nestor.testing import ServerToolCall
from tests.cli.support import git_repo
from tests.redteam.support import CAREFUL_RULES, run_calls, user_rules


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def test_backquotes_inside_an_expansion_or_a_here_document_are_commands_the_rules_see(tmp_path: Path) -> None:
    # tree-sitter-bash leaves `...` inside ${x-...} and inside a here-document as text: the
    # rules see "ls ..." and "cat <<E", bash runs rm.
    repo = git_repo(tmp_path / "repo", {"a": "keep", "b": "keep", "c": "keep"})
    user_rules(tmp_path, 'deny = ["bash(rm *)"]')
    results = run_calls(
        tmp_path,
        repo,
        [[bash("ls ${x-`rm a`}"), bash("cat <<E\n`rm b`\nE"), bash('ls "${x:-`rm c`}"')]],
        "--yolo",
    )
    assert all((repo / name).exists() for name in "abc"), results
    assert all("Permission denied" in result for result in results), results


def test_an_allow_rule_for_ls_and_cat_runs_no_hidden_backquoted_command(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"x": "x"})
    user_rules(tmp_path, CAREFUL_RULES)
    run_calls(tmp_path, repo, [[bash("ls ${x-`touch P`}"), bash("cat <<E\n`touch Q`\nE")]])
    assert not (repo / "P").exists() and not (repo / "Q").exists()


def test_a_read_rule_holds_for_a_substitution_that_reads_a_file(tmp_path: Path) -> None:
    # $(<file) reads the file as `cat < file` would; the rules do not see the redirection.
    repo = git_repo(tmp_path / "repo", {"secrets/key.txt": "hunter2\n", "notes.txt": "hi\n"})
    outside = tmp_path / "outside.txt"
    outside.write_text("private-outside\n")
    user_rules(tmp_path, CAREFUL_RULES)
    results = run_calls(tmp_path, repo, [[bash("ls $(<secrets/key.txt)"), bash(f"ls $(<{outside})")]])
    assert "hunter2" not in results[0], results  # Read(secrets/**) denies it
    assert "private-outside" not in results[1], results  # reading outside the project asks (headless: no)


def test_a_glob_in_a_redirection_is_judged_as_the_file_it_opens(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"secrets/key.txt": "hunter2\n", ".env": "SAFE=1\n"})
    user_rules(tmp_path, CAREFUL_RULES)
    read = run_calls(tmp_path, repo, [[bash("cat < secre?s/key.txt")]])
    assert "hunter2" not in read[0], read
    user_rules(tmp_path, 'deny = ["edit(.env)"]')
    run_calls(tmp_path, repo, [[bash("echo EVIL=1 >> .en?")]], "--yolo")
    assert (repo / ".env").read_text() == "SAFE=1\n"


def test_a_redirection_after_a_wrapper_changes_directory_is_judged_where_it_lands(tmp_path: Path) -> None:
    # env -C src runs the shell in src/: "../.env" is the project's .env, judged as ../.env.
    repo = git_repo(tmp_path / "repo", {".env": "SAFE=1\n", "src/a.py": "x = 1\n"})
    user_rules(tmp_path, 'deny = ["edit(.env)"]')
    results = run_calls(tmp_path, repo, [[bash("env -C src sh -c 'echo EVIL=1 >> ../.env'")]], "--yolo")
    assert (repo / ".env").read_text() == "SAFE=1\n", results


def test_a_redirection_through_a_link_the_same_line_makes_is_judged_as_its_target(tmp_path: Path) -> None:
    # The redirection's path is resolved when the line is judged, before "ln -s" runs.
    repo = git_repo(tmp_path / "repo", {".env": "SAFE=1\n"})
    user_rules(tmp_path, 'deny = ["edit(.env)"]')
    results = run_calls(tmp_path, repo, [[bash("ln -s .env innocent; echo EVIL=1 >> innocent")]], "--yolo")
    assert (repo / ".env").read_text() == "SAFE=1\n", results


def test_an_allowed_git_status_reads_no_config_the_line_points_it_at(tmp_path: Path) -> None:
    # HOME, XDG_CONFIG_HOME, GIT_DIR and GIT_COMMON_DIR choose the config git reads, as
    # GIT_CONFIG_GLOBAL does; a committed .gitconfig names an fsmonitor command.
    fsmonitor = '[core]\n\tfsmonitor = "echo ran > ran-$N.txt; false"\n'
    repo = git_repo(tmp_path / "repo", {".gitconfig": fsmonitor, "git/config": fsmonitor})
    user_rules(tmp_path, CAREFUL_RULES)
    run_calls(
        tmp_path,
        repo,
        [
            [
                bash("N=home HOME=. git status --short"),
                bash("N=xdg XDG_CONFIG_HOME=. git status --short"),
            ]
        ],
    )
    ran = sorted(path.name for path in repo.glob("ran-*.txt"))
    assert ran == [], f"git status ran the repository's fsmonitor under allow bash(git status*): {ran}"


def test_in_a_trusted_folder_too_an_allowed_git_status_reads_no_config_the_line_points_it_at(
    tmp_path: Path,
) -> None:
    # Trust applies the repository's own git settings; a committed .gitconfig is no git setting
    # until HOME=. makes it one (and in a trusted folder nothing overrides its fsmonitor).
    fsmonitor = '[core]\n\tfsmonitor = "echo ran > ran-$N.txt; false"\n'
    repo = git_repo(tmp_path / "repo", {".gitconfig": fsmonitor, "git/config": fsmonitor})
    user_rules(tmp_path, CAREFUL_RULES)
    calls = [bash("N=home HOME=. git status --short"), bash("N=xdg XDG_CONFIG_HOME=. git status --short")]
    run_calls(tmp_path, repo, [calls], "--trust")
    ran = sorted(path.name for path in repo.glob("ran-*.txt"))
    assert ran == [], f"git status ran a committed config's fsmonitor under allow bash(git status*): {ran}"
