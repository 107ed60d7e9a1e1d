"""The facts nestor adds under a history answer, read off real git output."""

import subprocess
from pathlib import Path

from nestor.runtime.features.small.acting.history import commits_cited, function_finder, lines_changed
from nestor.runtime.features.small.gathering.reader import ProjectReader

CONFIG = 'CURRENCY = "EUR"\nLOW_STOCK = 3\n\n\ndef label(amount):\n    return f"{amount} {CURRENCY}"\n'


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=a@b.c", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "config.py").write_text(CONFIG)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "First version")
    (root / "config.py").write_text(CONFIG.replace('"EUR"', '"USD"'))
    _git(root, "commit", "-qam", "Switch the default currency")
    (root / "README.md").write_text("# shop\n")
    _git(root, "add", "README.md")
    _git(root, "commit", "-qm", "Say what it is")
    return root


def _records(root: Path) -> tuple[str, str]:
    log = _git(root, "log", "-n15", "--date=short", "--format=%h %ad %an: %s", "--stat=100")
    patches = _git(root, "log", "-n4", "--format=commit %h: %s", "-p", "--no-color", "-U2")
    return log, patches


def test_a_commit_cited_by_its_message_gets_its_hash_and_the_lines_it_changed(tmp_path: Path) -> None:
    # The currency questions' answers named the commit but not the value before it.
    log, patches = _records(_project(tmp_path / "shop"))
    facts = commits_cited("The commit 'switch the default currency' changed it.", log, patches)
    short = _git(tmp_path / "shop", "rev-parse", "--short", "HEAD~1").strip()
    assert facts.startswith(f'Commits cited:\n- `{short}` "Switch the default currency" (')
    assert facts.endswith(': config.py: `CURRENCY = "EUR"` becomes `CURRENCY = "USD"`.')
    assert "Say what it is" not in facts and "First version" not in facts


def test_a_commit_cited_by_its_hash_gets_its_message(tmp_path: Path) -> None:
    root = _project(tmp_path / "shop")
    log, patches = _records(root)
    short = _git(root, "rev-parse", "--short", "HEAD").strip()
    facts = commits_cited(f"Commit {short} added the README.", log, patches)
    assert facts.startswith(f'Commits cited:\n- `{short}` "Say what it is" (')
    assert facts.endswith(": README.md: nothing becomes `# shop`.")


def test_an_answer_citing_no_commit_gets_no_facts(tmp_path: Path) -> None:
    log, patches = _records(_project(tmp_path / "shop"))
    assert commits_cited("Nothing in the history changed the currency.", log, patches) == ""


def test_a_short_uncommitted_diff_is_listed_line_by_line_with_its_function(tmp_path: Path) -> None:
    root = _project(tmp_path / "shop")
    (root / "config.py").write_text(CONFIG.replace('"EUR"', '"USD"').replace("{amount} ", "{amount:.2f} "))
    diff = _git(root, "diff", "HEAD", "--no-color", "-U2")
    # git's own hunk header says `LOW_STOCK = 3`: the change is placed by the code index instead.
    assert lines_changed(diff, "Not committed yet", function_finder(ProjectReader(root))) == (
        "Not committed yet: config.py (in `label`): "
        '`return f"{amount} {CURRENCY}"` becomes `return f"{amount:.2f} {CURRENCY}"`.'
    )


def test_a_long_diff_is_left_to_the_answer(tmp_path: Path) -> None:
    root = _project(tmp_path / "shop")
    (root / "config.py").write_text("".join(f"X{n} = {n}\n" for n in range(12)))
    assert lines_changed(_git(root, "diff", "HEAD", "--no-color", "-U2"), "Not committed yet") == ""
    assert lines_changed("", "Not committed yet") == ""
