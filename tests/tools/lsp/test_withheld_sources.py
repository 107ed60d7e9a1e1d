from __future__ import annotations

from pathlib import Path

from nestor.permissions import PermissionPolicy
from nestor.tools.base import ToolContext, WithheldFilter
from nestor.tools.lsp.manager import LspManager
from nestor.tools.lsp.withheld_sources import MAX_ENTRIES, withheld_source

PYTHON = (".py", ".pyi")


def _shown(root: Path, *deny: str) -> WithheldFilter:
    policy = PermissionPolicy.from_config([], [], list(deny), project_root=str(root))
    ctx = ToolContext(project_root=root, withholds=policy.withholds, may_withhold=policy.may_withhold)
    return WithheldFilter("hover", ctx)


def _project(tmp_path: Path) -> Path:
    root = (tmp_path / "project").resolve()
    (root / "private").mkdir(parents=True)
    (root / "private" / "conf.py").write_text("KEY = 'hunter2'\n")
    (root / "app.py").write_text("from private.conf import KEY\n")
    (root / ".env").write_text("KEY=1\n")
    return root


def test_a_withheld_file_of_the_servers_language_anywhere_in_the_project_is_found(tmp_path: Path) -> None:
    root = _project(tmp_path)

    assert "withhold a file" in withheld_source(root, PYTHON, _shown(root, "Read(private/**)"))
    assert "withhold a file" in withheld_source(root, PYTHON, _shown(root, "Read(**/conf.py)"))


def test_a_rule_on_files_the_server_does_not_read_withholds_nothing_of_its_answers(tmp_path: Path) -> None:
    root = _project(tmp_path)

    assert withheld_source(root, PYTHON, _shown(root, "Read(.env)")) == ""
    assert withheld_source(root, PYTHON, _shown(root)) == ""


def test_a_link_is_judged_where_it_leads(tmp_path: Path) -> None:
    root = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("X = 1\n")
    (root / "vendor").symlink_to(outside)  # the server reads through it

    assert "withhold a file" in withheld_source(root, PYTHON, _shown(root, f"Read({outside}/**)"))
    (root / "vendor").unlink()
    (root / "public.py").symlink_to(root / "private" / "conf.py")
    assert "withhold a file" in withheld_source(root, PYTHON, _shown(root, "Read(private/conf.py)"))


def test_a_project_too_large_to_walk_shows_no_inferred_text(tmp_path: Path) -> None:
    root = _project(tmp_path)

    assert "too many" in withheld_source(root, PYTHON, _shown(root), max_entries=2)
    assert withheld_source(root, PYTHON, _shown(root), max_entries=100) == ""


def test_with_no_rule_withholding_reads_a_project_of_any_size_is_not_walked(tmp_path: Path) -> None:
    # It was walked on every hover and edit, and past MAX_ENTRIES lost every hover with no rule at all.
    root = (tmp_path / "project").resolve()
    (root / "many").mkdir(parents=True)
    for number in range(MAX_ENTRIES + 1):
        (root / "many" / f"{number}.txt").touch()
    manager = LspManager({}, root=root, trusted=True, env={}, log_dir=tmp_path / "logs")

    assert manager.withheld_source(_shown(root)) == ""
    assert manager.withheld_source(_shown(root, "bash(rm *)", "webfetch")) == ""  # rules on no file read
    assert "too many" in manager.withheld_source(_shown(root, "Read(private/**)"))
