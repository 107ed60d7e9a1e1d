"""Textual is loaded only by the TUI: `--help`, `run`, `--plain`, `nestor` off a terminal never import it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.support import git_repo, openai_env

_PROBE = """
import contextlib, io, json, sys
from nestor.cli.main import run_app

codes = {}
for name, args in json.loads(sys.argv[1]).items():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes[name] = run_app(args)
print(json.dumps({"codes": codes, "textual": sorted(m for m in sys.modules if m.split(".")[0] == "textual")}))
"""


def test_textual_is_not_imported_outside_the_tui(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    commands = {
        "help": ["--help"],
        "run": ["run", "--model", "openai-chat:gpt-4o", "say hi"],
        "plain": ["--plain"],  # stdin is not a terminal: the REPL says so and exits 1
        "bare": [],  # likewise: off a terminal, the REPL and not the TUI
    }
    with ScriptedOpenAIServer([ServerReply(text="hi")]) as server:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps(commands)],
            cwd=repo,
            env=openai_env(tmp_path, server),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe == {"codes": {"help": 0, "run": 0, "plain": 1, "bare": 1}, "textual": []}
