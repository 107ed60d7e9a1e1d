"""The eval checks on real git workspaces: each kind of check passes and fails as the task format says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evals.checks import CheckOutcome, apply_reference, changed_files, check_outcome, glob_matches
from evals.tasks import Check, Commit, Edit, Reference, Task
from evals.workspace import git, prepare_workspace

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BUG = Edit(file="calc.py", old="a + b", new="a - b")
FIX = Edit(file="calc.py", old="a - b", new="a + b")
PYTEST = "{python} -m pytest -q -p no:cacheprovider tests"


@pytest.fixture
def repos_dir(tmp_path: Path) -> Path:
    repo = tmp_path / "repos" / "calc"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(TEST_CALC)
    (repo / "README.md").write_text("# calc\n")
    return repo.parent


def make_task(
    kind: str, check: Check, setup: tuple[Edit, ...] = (), reference: Reference | None = None
) -> Task:
    return Task(
        id=f"calc-{kind}",
        repo="calc",
        kind=kind,
        prompt="Do the thing.",
        check=check,
        setup=setup,
        reference=reference or Reference(),
    )


def workspace_for(task: Task, tmp_path: Path, repos_dir: Path) -> Path:
    parent = tmp_path / "work"
    parent.mkdir()
    return prepare_workspace(task, parent, repos_dir)


def test_answer_regexes_must_all_match_and_none_may(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task(
        "lookup", Check(answer_all=(r"(?i)\bsha-?1\b", r"signer\.py"), answer_none=(r"(?i)sha-?256",))
    )
    workspace = workspace_for(task, tmp_path, repos_dir)

    assert check_outcome(task, workspace, "The default is SHA-1, set in signer.py.").solved
    failed = check_outcome(task, workspace, "It uses sha256 (see signer.py).")
    assert not failed.solved
    assert failed.failures == (r"answer lacks /(?i)\bsha-?1\b/", "answer matches /(?i)sha-?256/")


def test_the_test_command_must_pass_and_its_failure_shows_the_last_lines(
    tmp_path: Path, repos_dir: Path
) -> None:
    task = make_task(
        "fix", Check(test_command=PYTEST), setup=(BUG,), reference=Reference(answer="Fixed.", edits=(FIX,))
    )
    workspace = workspace_for(task, tmp_path, repos_dir)

    failed = check_outcome(task, workspace, "")
    assert not failed.solved
    [failure] = failed.failures
    assert failure.startswith("tests failed (exit 1): ") and "1 failed" in failure
    assert "\n" not in failure and len(failure) < 400

    assert apply_reference(task, workspace) == "Fixed."
    assert check_outcome(task, workspace, "Fixed.") == CheckOutcome(solved=True, failures=())


def test_a_test_command_past_its_time_limit_fails(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task("fix", Check(test_command="{python} -c 'import time; time.sleep(60)'"))
    workspace = workspace_for(task, tmp_path, repos_dir)

    outcome = check_outcome(task, workspace, "", test_timeout_s=0.5)
    assert outcome.failures[0].startswith("tests timed out after 0.5 s")


def test_unchanged_files_must_stay_so_even_when_the_harness_commits(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task("fix", Check(unchanged=("tests/**",)))
    workspace = workspace_for(task, tmp_path, repos_dir)
    (workspace / "calc.py").write_text(CALC + "\n# more\n")
    (workspace / "tests" / "__pycache__").mkdir()
    (workspace / "tests" / "__pycache__" / "test_calc.cpython-311.pyc").write_bytes(b"\0")
    assert check_outcome(task, workspace, "").solved

    (workspace / "tests" / "test_calc.py").write_text(TEST_CALC.replace("5", "-1"))
    git(workspace, "-c", "user.email=a@b.c", "-c", "user.name=agent", "commit", "-qam", "weaken the test")
    assert git(workspace, "status", "--porcelain", "--untracked-files=no") == ""
    outcome = check_outcome(task, workspace, "")
    assert outcome.failures == ("changed tests/test_calc.py, which must stay unchanged",)


def test_changed_globs_need_a_matching_file_changed_added_or_deleted(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task("feature", Check(changed=("calc.py", "src/**/*.py")))
    workspace = workspace_for(task, tmp_path, repos_dir)
    assert check_outcome(task, workspace, "").failures == (
        "no file matching calc.py changed",
        "no file matching src/**/*.py changed",
    )

    (workspace / "calc.py").unlink()
    (workspace / "src").mkdir()
    (workspace / "src" / "new.py").write_text("x = 1\n")
    assert check_outcome(task, workspace, "").solved
    assert changed_files(workspace) == {"calc.py", "src/new.py"}


def test_no_file_outside_the_allowed_globs_may_change(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task("fix", Check(allowed=("calc.py",)))
    workspace = workspace_for(task, tmp_path, repos_dir)
    (workspace / "calc.py").write_text(CALC + "\n# more\n")
    assert check_outcome(task, workspace, "").solved

    (workspace / "README.md").write_text("# calc, changed\n")
    (workspace / "notes.txt").write_text("left behind\n")
    outcome = check_outcome(task, workspace, "")
    assert outcome.failures == ("changed README.md, notes.txt, outside what the request allows",)


def test_history_is_committed_in_order_and_uncommitted_edits_are_what_the_harness_was_given(
    tmp_path: Path, repos_dir: Path
) -> None:
    task = dataclasses.replace(
        make_task("history", Check(answer_all=("x",))),
        history=(
            Commit("Add a comment", (Edit("calc.py", "def add", "# adds\ndef add"),)),
            Commit("Say hello", (Edit("README.md", "# calc\n", "# calc\n\nhello\n"),)),
        ),
        uncommitted=(Edit("calc.py", "a + b", "b + a"),),
    )
    workspace = workspace_for(task, tmp_path, repos_dir)

    log = git(workspace, "log", "--format=%s|%an|%ad", "--date=short")
    assert log.splitlines() == [
        "Say hello|Grace Hopper|2026-01-03",
        "Add a comment|Ada Lovelace|2026-01-02",
        "baseline|nestor eval|2026-01-01",
    ]
    assert git(workspace, "diff", "--name-only") == "calc.py\n"  # still uncommitted
    assert "b + a" in (workspace / "calc.py").read_text()
    # What the harness was given is the baseline: its uncommitted edit is no change of the harness's.
    assert changed_files(workspace) == set()
    assert check_outcome(task, workspace, "x").solved
    (workspace / "calc.py").write_text(CALC)
    assert changed_files(workspace) == {"calc.py"}


def test_files_all_needs_each_regex_in_some_matching_file(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task("rename", Check(files_all={"**/*.py": (r"\bplus\b", r"def \w+\(a, b\)")}))
    workspace = workspace_for(task, tmp_path, repos_dir)
    assert check_outcome(task, workspace, "").failures == (r"no file matching **/*.py contains /\bplus\b/",)

    (workspace / "tests" / "test_calc.py").write_text(TEST_CALC.replace("add", "plus"))
    assert check_outcome(task, workspace, "").solved


def test_files_none_forbids_a_regex_in_every_matching_file(tmp_path: Path, repos_dir: Path) -> None:
    task = make_task("rename", Check(files_none={"**/*.py": (r"\badd\b",)}))
    workspace = workspace_for(task, tmp_path, repos_dir)
    assert check_outcome(task, workspace, "").failures == (r"/\badd\b/ is in calc.py, tests/test_calc.py",)

    for path in (workspace / "calc.py", workspace / "tests" / "test_calc.py"):
        path.write_text(path.read_text().replace("add", "plus"))
    assert check_outcome(task, workspace, "").solved


def test_a_question_must_change_nothing_but_caches_and_harness_state_do_not_count(
    tmp_path: Path, repos_dir: Path
) -> None:
    task = make_task("explain", Check(answer_all=("adds",)))
    workspace = workspace_for(task, tmp_path, repos_dir)
    for dropping in (
        "__pycache__/calc.cpython-311.pyc",
        ".pytest_cache/v/cache/lastfailed",
        ".aider.chat.history.md",
        ".aider.tags.cache.v4/cache.db",
        ".nestor/agents/notes.md",
    ):
        (workspace / dropping).parent.mkdir(parents=True, exist_ok=True)
        (workspace / dropping).write_text("x")
    assert check_outcome(task, workspace, "It adds a and b.").solved

    (workspace / "notes.txt").write_text("scratch\n")
    (workspace / "README.md").unlink()
    outcome = check_outcome(task, workspace, "It adds a and b.")
    assert outcome.failures == ("changed README.md, notes.txt, but a question must change nothing",)


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("tests/**", "tests/test_a.py", True),
        ("tests/**", "tests/unit/test_a.py", True),
        ("tests/**", "src/tests.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/pkg/deep/a.py", True),
        ("src/**/*.py", "src/a.pyc", False),
        ("**/*.py", "a.py", True),
        ("*.py", "pkg/a.py", False),
        ("calc.py", "calc.py", True),
        ("calc.py", "calcXpy", False),
        ("test_?.py", "test_a.py", True),
        ("[!a]*.md", "README.md", True),
        ("[!R]*.md", "README.md", False),
    ],
)
def test_glob_semantics(glob: str, path: str, matches: bool) -> None:
    assert glob_matches(glob, path) is matches
