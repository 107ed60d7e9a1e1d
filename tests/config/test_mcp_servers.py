"""``[mcp_servers]`` and Claude Code's ``.mcp.json``: shapes, one-line errors, trust."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nestor.config.loading import load_settings
from nestor.config.settings import IgnoredSetting
from nestor.core.errors import ConfigError


def settings_of(project: Path, toml: str = "", mcp_json: object = None, *, trusted: bool = True, **env: str):
    project.mkdir(exist_ok=True)
    if toml:
        (project / "nestor.toml").write_text(toml)
    if mcp_json is not None:
        (project / ".mcp.json").write_text(mcp_json if isinstance(mcp_json, str) else json.dumps(mcp_json))
    return load_settings(
        project, env={"HOME": str(project), **env}, user_config_path=project / "none.toml", trusted=trusted
    )


def test_stdio_and_http_servers_with_their_defaults(tmp_path: Path) -> None:
    settings = settings_of(
        tmp_path,
        '[mcp_servers.files]\ncommand = "npx"\nargs = ["-y", "server"]\nenv = {TOKEN = "x"}\n'
        '[mcp_servers.remote]\nurl = "https://example.com/mcp"\nheaders = {Authorization = "Bearer t"}\n'
        "timeout = 5\n"
        '[mcp_servers.old]\nurl = "http://127.0.0.1:1/sse"\ntransport = "sse"\nenabled = false\n',
    )
    files, remote, old = (settings.mcp_servers[name] for name in ("files", "remote", "old"))
    assert (files.kind, files.args, files.env, files.timeout, files.tool_timeout) == (
        "stdio",
        ("-y", "server"),
        {"TOKEN": "x"},
        30.0,
        600.0,
    )
    assert (remote.kind, remote.headers, remote.timeout) == ("http", {"Authorization": "Bearer t"}, 5)
    assert (old.kind, old.enabled) == ("sse", False)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[mcp_servers.x]\nargs = ["a"]\n', "give either `command`"),
        ('[mcp_servers.x]\ncommand = "a"\nurl = "http://h/mcp"\n', "give either `command`"),
        ('[mcp_servers.x]\ncommand = "a"\ntransport = "sse"\n', "needs a `url`"),
        ('[mcp_servers.x]\nurl = "ftp://h"\n', "http:// or https://"),
        ('[mcp_servers."a__b"]\ncommand = "a"\n', "single '_'"),
        ('[mcp_servers.x]\ncommand = "a"\ntimout = 3\n', "unknown key 'mcp_servers.x.timout'"),
    ],
)
def test_a_bad_server_table_is_one_line_naming_the_key(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        settings_of(tmp_path, table)
    assert "\n" not in caught.value.message


def test_mcp_json_is_read_in_a_trusted_folder_with_the_allowed_variables_expanded(tmp_path: Path) -> None:
    (tmp_path / "none.toml").write_text('[mcp]\nexpand_env = ["HOME", "HOST", "TOKEN", "MODE"]\n')
    document = {
        "mcpServers": {
            "gh": {
                "type": "stdio",
                "command": "${HOME}/bin/gh-mcp",
                "args": ["${MODE:-read}"],
                "env": {"T": "${TOKEN}"},
            },
            "api": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"A": "b"}},
        }
    }
    settings = settings_of(tmp_path, mcp_json=document, HOST="example.com", TOKEN="secret")
    gh, api = settings.mcp_servers["gh"], settings.mcp_servers["api"]
    assert (gh.command, gh.args, gh.env) == (f"{tmp_path}/bin/gh-mcp", ("read",), {"T": "secret"})
    assert (api.kind, api.url) == ("http", "https://example.com/mcp")
    assert settings.ignored == ()


def test_nestor_toml_wins_over_mcp_json_for_the_same_server(tmp_path: Path) -> None:
    settings = settings_of(
        tmp_path, '[mcp_servers.gh]\ncommand = "mine"\n', {"mcpServers": {"gh": {"command": "theirs"}}}
    )
    assert settings.mcp_servers["gh"].command == "mine"


def test_an_untrusted_folders_servers_are_ignored_and_named(tmp_path: Path) -> None:
    settings = settings_of(
        tmp_path,
        '[mcp_servers.evil]\ncommand = "curl"\n',
        {"mcpServers": {"cc": {"command": "x"}}},
        trusted=False,
    )
    assert settings.mcp_servers == {}
    assert set(settings.ignored) == {
        IgnoredSetting("mcp_servers.evil", "untrusted"),
        IgnoredSetting(".mcp.json server cc", "untrusted"),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "invalid JSON"),
        ('{"mcpServers": []}', "expected"),
        ('{"mcpServers": {"a": {"cmd": "x"}}}', "unknown key"),
    ],
)
def test_a_bad_mcp_json_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_of(tmp_path, mcp_json=text)
