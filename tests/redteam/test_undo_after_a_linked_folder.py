"""A command that replaces a folder by a link makes its prompt's changes impossible to undo.

README, "Checkpoints and undo": every change nestor's agents make to the project can be undone,
bash commands included; SECURITY.md, "nestor's own commands": checkpoints (an undo never writes
through a folder that is now a link). Today the snapshot after such a command fails, the shadow
index is started again as a first snapshot, and the deletion is recorded nowhere: ``nestor undo``
finds nothing to put back.
"""

from __future__ import annotations

from pathlib import Path

from nestor.testing import ServerToolCall
from tests.cli.support import clean_env, git_repo, nestor
from tests.redteam.support import run_calls, user_config


def test_a_folder_replaced_by_a_link_is_put_back_by_undo(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"d/f.txt": "precious\n", "keep.txt": "keep\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    user_config(tmp_path, "")
    command = f"rm -r d; ln -s {outside} d"
    run_calls(tmp_path, repo, [[ServerToolCall("bash", {"command": command})]], "--yolo")
    assert (repo / "d").is_symlink()
    # nestor undo sends no request: a provider that answers nothing will do.
    env = clean_env(tmp_path / "home", OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="k")
    undone = nestor(["undo", "--code-only"], cwd=repo, env=env)
    assert undone.returncode == 0, undone.stderr
    assert not (repo / "d").is_symlink(), undone.stdout
    assert (repo / "d" / "f.txt").read_text() == "precious\n", undone.stdout
    assert list(outside.iterdir()) == []  # and nothing was written through the link
