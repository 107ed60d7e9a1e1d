"""``nestor mcp add|list|get|remove`` in a real subprocess, against the real demo MCP server."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cli.support import clean_env, nestor, nestor_json
from tests.tools.mcp.support import DEMO_SERVER

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path / "home")


def add_demo(project: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """``nestor mcp add demo OPTIONS -- python demo_server.py``, which must succeed."""
    added = nestor(
        ["mcp", "add", "demo", *options, "--", sys.executable, str(DEMO_SERVER)], cwd=project, env=env
    )
    assert added.returncode == 0, added.stderr
    return added


def test_a_stdio_server_added_shows_in_mcp_list_json_with_its_status_and_tools(
    project: Path, env: dict[str, str]
) -> None:
    added = add_demo(project, env, "--env", "GREETING=hi")
    config_path = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
    assert f"added MCP server demo to {config_path}" in added.stdout
    table = tomllib.loads(config_path.read_text())["mcp_servers"]["demo"]
    assert table == {"command": sys.executable, "args": [str(DEMO_SERVER)], "env": {"GREETING": "hi"}}

    listed = nestor_json(["mcp", "list", "--json"], cwd=project, env=env)

    (server,) = listed["servers"]
    assert server["name"] == "demo" and server["transport"] == "stdio" and server["status"] == "running"
    assert server["tools"] == len(server["tool_names"]) >= 8 and "mcp__demo__echo" in server["tool_names"]
    assert server["enabled"] is True and server["error"] == ""
    assert (server["origin"], server["approved"]) == ("user config", None)  # your own: no approval
    shown = nestor(["mcp", "get", "demo"], cwd=project, env=env)
    assert "status: running" in shown.stdout and "  mcp__demo__echo" in shown.stdout


def test_an_http_server_is_added_with_its_headers_and_a_dead_one_lists_as_failed(
    project: Path, env: dict[str, str]
) -> None:
    added = nestor(
        [
            "mcp",
            "add",
            "--transport",
            "http",
            "api",
            "http://127.0.0.1:9/mcp",
            "-H",
            "Authorization: Bearer t",
        ],
        cwd=project,
        env=env,
    )
    assert added.returncode == 0, added.stderr

    (server,) = nestor_json(["mcp", "list", "--json"], cwd=project, env=env)["servers"]

    assert (server["transport"], server["status"], server["tools"]) == ("http", "failed", 0)
    assert server["error"].startswith("it could not start")


def test_a_project_server_goes_to_mcp_json_and_applies_only_once_trusted(
    project: Path, env: dict[str, str]
) -> None:
    added = add_demo(project, env, "--scope", "project")
    assert "nestor trust" in added.stdout and "nestor mcp approve demo" in added.stdout
    document = json.loads((project / ".mcp.json").read_text())
    assert document == {
        "mcpServers": {"demo": {"type": "stdio", "command": sys.executable, "args": [str(DEMO_SERVER)]}}
    }

    untrusted = nestor(["mcp", "list", "--json"], cwd=project, env=env)
    assert json.loads(untrusted.stdout) == {"servers": []}
    assert (
        "its setting that would widen what nestor may do or where data goes was ignored "
        "(.mcp.json server demo)"
        in untrusted.stderr
        and "nestor trust" in untrusted.stderr
    )
    trusted = nestor_json(["--trust", "mcp", "list", "--json"], cwd=project, env=env)
    (server,) = trusted["servers"]
    assert (server["name"], server["origin"], server["status"], server["approved"]) == (
        "demo",
        ".mcp.json",
        "not approved",
        False,
    )
    assert "nestor mcp approve demo" in nestor(["--trust", "mcp", "list"], cwd=project, env=env).stdout


def test_remove_takes_the_server_out_and_mistakes_are_one_line(project: Path, env: dict[str, str]) -> None:
    add_demo(project, env)
    again = nestor(["mcp", "add", "demo", "--", "other"], cwd=project, env=env)
    assert again.returncode == 1 and "already has an MCP server named 'demo'" in again.stderr

    removed = nestor(["mcp", "remove", "demo"], cwd=project, env=env)

    assert removed.returncode == 0 and "removed MCP server demo" in removed.stdout
    assert nestor_json(["mcp", "list", "--json"], cwd=project, env=env) == {"servers": []}
    for args in (["mcp", "remove", "demo"], ["mcp", "get", "nope"], ["mcp", "add", "a__b", "--", "x"]):
        done = nestor(args, cwd=project, env=env)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith("error: ") and "hint: " in done.stderr
