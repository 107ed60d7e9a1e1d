"""``nestor lsp list``: the servers found on PATH and configured, and their state, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.support import clean_env, nestor
from tests.tools.lsp.conftest import pylsp_bin

pytestmark = pytest.mark.timeout(120)


def lsp_env(tmp_path: Path, user_config: str = "") -> dict[str, str]:
    env = clean_env(tmp_path / "home")
    env["PATH"] = f"{pylsp_bin(tmp_path / 'bin')}{os.pathsep}{env.get('PATH', '')}"
    config = tmp_path / "home" / ".config" / "nestor" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[lsp.pyright]\nenabled = false\n[lsp.basedpyright]\nenabled = false\n" + user_config)
    return env


def nestor_lsp(args: list[str], project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return nestor(args, cwd=project, env=env, timeout=90, python_options=("-X", "importtime"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n", encoding="utf-8")
    return root


def states(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str]]:
    assert done.returncode == 0, done.stderr[-2000:]
    return {row["name"]: (row["state"], row["detail"]) for row in json.loads(done.stdout)}


def test_lsp_list_shows_pylsp_found_on_path_and_starts_nothing(tmp_path: Path, project: Path) -> None:
    env = lsp_env(tmp_path, '[lsp.broken]\nextensions = [".x"]\n')
    done = nestor_lsp(["--trust", "lsp", "list", "--json"], project, env)
    found = states(done)
    assert found["pylsp"] == ("available", "")
    assert found["pyright"][0] in ("disabled", "not found")  # disabled by the user config, if found
    assert found["clangd"] == ("not found", "")
    assert found["broken"][0] == "failed" and "[lsp.broken] has no command" in found["broken"][1]
    assert "pygls" not in done.stderr  # resolving starts nothing
    text = nestor_lsp(["--trust", "lsp", "list"], project, env)
    assert text.stdout.splitlines()[0].split() == ["server", "language", "state", "command"]
    assert any(line.split()[:3] == ["pylsp", "python", "available"] for line in text.stdout.splitlines())


def test_lsp_list_check_starts_the_project_servers(tmp_path: Path, project: Path) -> None:
    found = states(nestor_lsp(["--trust", "lsp", "list", "--check", "--json"], project, lsp_env(tmp_path)))
    assert found["pylsp"] == ("running", "")


def test_lsp_list_in_an_untrusted_folder_says_why_nothing_runs(tmp_path: Path, project: Path) -> None:
    (project / "nestor.toml").write_text('[lsp.evil]\ncommand = "sh"\nextensions = [".py"]\n')
    found = states(nestor_lsp(["lsp", "list", "--check", "--json"], project, lsp_env(tmp_path)))
    assert found["pylsp"] == ("untrusted", "this folder is not trusted; run `nestor trust` to use it")
    assert "evil" not in found  # an untrusted nestor.toml configures no server
