"""The ACP SDK is loaded only by ``nestor acp``: `--version`, `--help` and `run` never import it."""

from __future__ import annotations

from pathlib import Path

from tests.cli.support import imports_of_commands


def test_the_acp_sdk_is_not_imported_outside_nestor_acp(tmp_path: Path) -> None:
    commands = {
        "version": ["--version"],
        "help": ["--help"],
        "acp_help": ["acp", "--help"],
        "run": ["run", "--model", "openai-chat:gpt-4o", "say hi"],
    }
    probe = imports_of_commands(tmp_path, commands, ["acp"])
    assert probe == {"codes": {"version": 0, "help": 0, "acp_help": 0, "run": 0}, "imported": []}
