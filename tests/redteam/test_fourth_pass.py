"""Fourth red-team pass: reproductions of what got through, each failing on main at 3201eac.

Each test runs the real command line (``nestor run``) with a scripted model over loopback HTTP,
as the third pass's reproductions do (``tests/redteam/support.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nestor.testing import ServerToolCall
from tests.cli.support import clean_env, git_repo, nestor
from tests.redteam.support import CAREFUL_RULES, run_calls, user_config, user_rules


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def test_a_tilde_plus_redirection_is_judged_as_the_file_bash_opens(tmp_path: Path) -> None:
    # bash expands "~+" to $PWD (and "~-" to $OLDPWD, "~+0" to the top of the directory stack);
    # the rules read "~+/secrets/key.txt" as a relative path under a folder named "~+".
    repo = git_repo(tmp_path / "repo", {"secrets/key.txt": "hunter2\n", ".env": "SAFE=1\n"})
    user_rules(tmp_path, CAREFUL_RULES)
    read = run_calls(tmp_path, repo, [[bash("cat < ~+/secrets/key.txt")]])
    assert "hunter2" not in read[0], read  # Read(secrets/**) denies it
    user_rules(tmp_path, 'deny = ["edit(.env)"]')
    wrote = run_calls(tmp_path, repo, [[bash("echo EVIL=1 >> ~+/.env")]], "--yolo")
    assert (repo / ".env").read_text() == "SAFE=1\n", wrote


def test_a_proc_self_redirection_is_judged_in_the_shell_that_opens_it(tmp_path: Path) -> None:
    # /proc/self/cwd and /dev/fd/N are the shell's own, not nestor's: nestor resolves them in its
    # own process when it judges the line, and lands on another file than bash opens.
    repo = git_repo(tmp_path / "repo", {"secrets/key.txt": "hunter2\n", ".env": "SAFE=1\n", "src/a": "a\n"})
    user_rules(tmp_path, 'deny = ["bash(rm *)", "Read(secrets/**)", "edit(.env)"]')
    results = run_calls(
        tmp_path,
        repo,
        [
            [
                bash("cd src && echo EVIL=1 >> /proc/self/cwd/../.env"),
                bash("{ cat < /dev/fd/3/secrets/key.txt; } 3< ."),
            ]
        ],
        "--yolo",
    )
    assert (repo / ".env").read_text() == "SAFE=1\n", results
    assert "hunter2" not in results[1], results


PYLSP = Path(sys.executable).parent / "pylsp"
LSP_ONLY_PYLSP = (
    '[permissions]\ndeny = ["Read(private/**)"]\n\n[lsp.pyright]\nenabled = false\n\n'
    "[lsp.basedpyright]\nenabled = false\n"
)


@pytest.mark.timeout(240)
@pytest.mark.skipif(not PYLSP.exists() and shutil.which("pylsp") is None, reason="pylsp is not installed")
def test_hover_on_a_name_bound_to_a_withheld_definition_shows_nothing_of_it(tmp_path: Path) -> None:
    # hover asks the server for the definition of the name hovered: for "alias" that is the
    # assignment in app.py, a file the rules let through; the hover text is api_key's docstring.
    repo = git_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n",
            "private/__init__.py": "",
            "private/conf.py": 'def api_key():\n    """The key is hunter2-SECRET."""\n    return 1\n',
            "app.py": "from private.conf import api_key\nalias = api_key\nprint(alias())\n",
        },
    )
    user_config(tmp_path, LSP_ONLY_PYLSP)
    path = f"{PYLSP.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    results = run_calls(
        tmp_path,
        repo,
        [[ServerToolCall("hover", {"path": "app.py", "line": 3, "symbol": "alias"})]],
        "--trust",
        env={"PATH": path},
        timeout=200,
    )
    assert "hunter2-SECRET" not in results[0], results


PYRIGHT = Path(sys.executable).parent / "pyright-langserver"


@pytest.mark.timeout(240)
@pytest.mark.skipif(not PYRIGHT.exists(), reason="pyright is not installed")
def test_diagnostics_quote_nothing_of_a_withheld_file(tmp_path: Path) -> None:
    # pyright's message about app.py quotes the literal type of a constant private/conf.py
    # declares; the problem names no withheld file in its related information, so it is shown.
    repo = git_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n",
            "private/__init__.py": "",
            "private/conf.py": 'from typing import Final\nKEY: Final = "hunter2-SECRET"\n',
            "app.py": "from private.conf import KEY\nx: int = KEY\n",
        },
    )
    user_config(tmp_path, '[permissions]\ndeny = ["Read(private/**)"]\n\n[lsp.pylsp]\nenabled = false\n')
    path = f"{PYRIGHT.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    results = run_calls(
        tmp_path,
        repo,
        [[ServerToolCall("diagnostics", {"path": "app.py"})]],
        "--trust",
        env={"PATH": path},
        timeout=200,
    )
    assert "hunter2-SECRET" not in results[0], results


def test_a_small_file_grown_past_the_size_limit_is_put_back_by_undo(tmp_path: Path) -> None:
    # keep.txt was snapshotted (5 bytes) before the command; the command appends 11 MB of junk.
    # The snapshot after it leaves the file out as "large", the change is attributed to nobody, and
    # the undo says keep.txt was "never snapshotted" and leaves the junk: its content is lost.
    repo = git_repo(tmp_path / "repo", {"keep.txt": "precious\n", "d/f.txt": "f\n"})
    user_config(tmp_path, "")
    command = "head -c 11M /dev/zero >> keep.txt; rm d/f.txt"
    run_calls(tmp_path, repo, [[bash(command)]], "--yolo")
    env = clean_env(tmp_path / "home", OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="k")
    undone = nestor(["undo", "--code-only"], cwd=repo, env=env)
    assert undone.returncode == 0, undone.stderr
    assert (repo / "keep.txt").read_bytes() == b"precious\n", undone.stdout


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_an_allowed_git_status_runs_no_filter_of_an_embedded_submodule(tmp_path: Path) -> None:
    # A repository delivered with its .git (a tarball) holds a submodule whose git dir is a folder in
    # its work tree (sub/.git), not .git/modules/sub: neutralize lists only the root's config and
    # .git/modules, so sub's clean filter is not overridden, and the root's `git status` recursing
    # into the submodule runs it.
    repo = tmp_path / "repo"
    sub = repo / "sub"
    sub.mkdir(parents=True)
    _git(sub, "init", "-q")
    (sub / "f.txt").write_text("data\n")
    (sub / ".gitattributes").write_text("* filter=evil\n")
    _git(sub, "add", ".")
    _git(sub, "commit", "-qm", "s")
    _git(sub, "config", "filter.evil.clean", f"sh -c 'echo ran > {repo}/ran.txt; cat'")
    _git(repo, "init", "-q")
    (repo / "top.txt").write_text("top\n")
    _git(repo, "add", "top.txt")
    _git(repo, "update-index", "--add", "--cacheinfo", f"160000,{_git(sub, 'rev-parse', 'HEAD')},sub")
    _git(repo, "commit", "-qm", "t")
    os.utime(sub / "f.txt", (1, 1))  # as an extracted archive: the stat data no longer matches
    user_rules(tmp_path, CAREFUL_RULES)
    results = run_calls(tmp_path, repo, [[bash("git status --short")]])
    assert not (repo / "ran.txt").exists(), results
