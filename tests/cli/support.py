"""Running the real ``nestor`` command line in a subprocess against a scripted loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer

PROVIDER_KEYS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "NESTOR_MODEL",
    "NESTOR_SMALL_MODEL",
    "NESTOR_HOME",
)


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a nestor subprocess: no provider keys, a private home and data dir."""
    env = {key: value for key, value in os.environ.items() if key not in PROVIDER_KEYS}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        NESTOR_HOME=str(home / "nestor-data"),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def openai_env(tmp_path: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    """A clean environment whose openai provider talks to the scripted loopback ``server``."""
    return clean_env(tmp_path / "home", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test-key")


def nestor(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = 60,
    stdin: str | None = None,
    python_options: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run ``python [PYTHON_OPTIONS] -m nestor ARGS`` (``-X importtime``...) and return what it printed."""
    return subprocess.run(
        [sys.executable, *python_options, "-m", "nestor", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def nestor_json(args: list[str], *, cwd: Path, env: dict[str, str]) -> Any:
    """Run a nestor command that prints JSON and return it parsed (failing loudly otherwise)."""
    done = nestor(args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def git_repo(path: Path, files: dict[str, str]) -> Path:
    """Create a git repository with ``files`` committed."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    run = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run([*run, "add", "-A"], cwd=path, check=True)
    subprocess.run([*run, "commit", "-qm", "init"], cwd=path, check=True)
    return path


_IMPORT_PROBE = """
import contextlib, io, json, sys
from nestor.cli.entry import main

codes = {}
for name, args in json.loads(sys.argv[1]).items():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes[name] = main(args)
roots = json.loads(sys.argv[2])
print(json.dumps({"codes": codes, "imported": sorted(m for m in sys.modules if m.split(".")[0] in roots)}))
"""


def imports_of_commands(
    tmp_path: Path, commands: dict[str, list[str]], roots: list[str], reply: str = "hi"
) -> dict[str, Any]:
    """Run ``commands`` in one interpreter (a scripted server answers ``reply``); their exit codes and
    which modules of the packages ``roots`` they imported: ``{"codes": ..., "imported": [...]}``."""
    from nestor.testing import ServerReply

    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    with ScriptedOpenAIServer([ServerReply(text=reply)]) as server:
        done = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE, json.dumps(commands), json.dumps(roots)],
            cwd=repo,
            env=openai_env(tmp_path, server),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
