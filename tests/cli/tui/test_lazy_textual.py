"""Textual is loaded only by the TUI: `--help`, `run`, `--plain`, `nestor` off a terminal never import it."""

from __future__ import annotations

from pathlib import Path

from tests.cli.support import imports_of_commands


def test_textual_is_not_imported_outside_the_tui(tmp_path: Path) -> None:
    commands = {
        "help": ["--help"],
        "run": ["run", "--model", "openai-chat:gpt-4o", "say hi"],
        "plain": ["--plain"],  # stdin is not a terminal: the REPL says so and exits 1
        "bare": [],  # likewise: off a terminal, the REPL and not the TUI
    }
    probe = imports_of_commands(tmp_path, commands, ["textual"])
    assert probe == {"codes": {"help": 0, "run": 0, "plain": 1, "bare": 1}, "imported": []}
