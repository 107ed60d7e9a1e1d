"""Hooks read from every config source, merged, each with its source; a project's only when trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nestor.config.hooks import read_claude_settings_hooks
from nestor.config.loading import load_settings
from nestor.core.errors import ConfigError

USER_TOML = (
    '[[hooks.PostToolUse]]\nmatcher = "Edit|Write"\n'
    'hooks = [{ type = "command", command = "fmt", timeout = 5 }]\n'
)


def _claude(hooks: object) -> str:
    return json.dumps({"permissions": {"allow": []}, "hooks": hooks})


def _settings(tmp_path: Path, *, trusted: bool):
    user = tmp_path / "config.toml"
    user.write_text(USER_TOML)
    return load_settings(
        tmp_path / "project", env={"HOME": str(tmp_path)}, user_config_path=user, trusted=trusted
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".claude").mkdir(parents=True)
    (folder / "nestor.toml").write_text(
        '[[hooks.Stop]]\nhooks = [{ type = "command", command = "make test" }]\n'
    )
    (folder / ".claude" / "settings.json").write_text(
        _claude({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]})
    )
    (folder / ".claude" / "settings.local.json").write_text(
        _claude({"Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]})
    )
    user_claude = tmp_path / ".claude" / "settings.json"
    user_claude.parent.mkdir()
    user_claude.write_text(
        _claude(
            {
                "PreToolUse": [
                    {
                        "matcher": "*",
                        "hooks": [{"type": "command", "command": "log"}, {"type": "prompt", "prompt": "?"}],
                    }
                ],
                "TeammateIdle": [{"hooks": [{"type": "command", "command": "only claude has it"}]}],
            }
        )
    )
    return folder


def test_a_trusted_project_adds_its_hooks_to_the_users_each_with_its_source(
    tmp_path: Path, project: Path
) -> None:
    settings = _settings(tmp_path, trusted=True)
    found = [
        (h.event, h.matcher, h.command, h.timeout_s, h.source, h.project) for h in settings.configured_hooks
    ]
    assert found == [
        ("PostToolUse", "Edit|Write", "fmt", 5.0, str(tmp_path / "config.toml"), False),
        ("PreToolUse", "*", "log", 60.0, str(tmp_path / ".claude" / "settings.json"), False),
        ("Stop", None, "make test", 60.0, "nestor.toml", True),
        ("PreToolUse", "Bash", "guard", 60.0, ".claude/settings.json", True),
        ("Notification", None, "notify-send hi", 60.0, ".claude/settings.local.json", True),
    ]  # Claude Code's prompt hooks and its events nestor does not fire are left out of its file


def test_an_untrusted_project_brings_no_hook_and_each_source_is_named(tmp_path: Path, project: Path) -> None:
    settings = _settings(tmp_path, trusted=False)
    assert all(not hook.project for hook in settings.configured_hooks)
    ignored = {item.key for item in settings.ignored if item.reason == "untrusted"}
    assert {"hooks.Stop", ".claude/settings.json hooks", ".claude/settings.local.json hooks"} <= ignored


def test_a_bad_hook_in_a_trusted_project_is_one_line_naming_its_file_and_key(
    tmp_path: Path, project: Path
) -> None:
    (project / "nestor.toml").write_text(
        '[[hooks.Stop]]\nhooks = [{ type = "command", command = "x", timeout = -1 }]\n'
    )
    with pytest.raises(ConfigError) as raised:
        _settings(tmp_path, trusted=True)
    assert raised.value.message.startswith(
        f"{project / 'nestor.toml'}: hooks.Stop.0.hooks.0.timeout: input should be greater than 0"
    )
    (project / "nestor.toml").write_text("")
    (project / ".claude" / "settings.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"settings\.json:1: invalid JSON"):
        _settings(tmp_path, trusted=True)


def test_the_readmes_claude_code_example_reads_as_written(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Hooks", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    path = tmp_path / "settings.json"
    path.write_text(block, encoding="utf-8")
    table = read_claude_settings_hooks(path)
    assert table is not None and set(table) == {"PreToolUse", "PostToolUse", "Notification"}
    assert [group.matcher for group in table["PreToolUse"]] == ["Bash", "Edit|Write"]
