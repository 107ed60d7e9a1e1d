"""Language servers through the real app: a scripted model edits and explores a project pylsp serves."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nestor.app import App
from nestor.config import Settings, load_settings
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.tools.lsp.conftest import HELPERS, USES, pylsp_bin

pytestmark = pytest.mark.timeout(120)

# Only pylsp is found (a pyright on the developer's PATH would be preferred), and it is given
# time on a busy machine.
USER_CONFIG = """
[lsp.pyright]
enabled = false
[lsp.basedpyright]
enabled = false
[lsp.pylsp]
diagnostics_timeout_s = 20
"""


def python_project(root: Path, base_url: str) -> Settings:
    project = root / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (project / "uses.py").write_text(USES, encoding="utf-8")
    config = '[models.large]\nmodel = "scripted:large-model"\nprofile = "full"\n'
    config += '[models.small]\nmodel = "scripted:small-model"\nprofile = "full"\n'
    config += f'[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
    config += '[permissions]\nallow = ["edit"]\n'
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    user_config = root / "config.toml"
    user_config.write_text(USER_CONFIG, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=user_config, trusted=True)


@pytest.fixture
def pylsp_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{pylsp_bin(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}")


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[str]:
    return [message["content"] for message in body["messages"] if message["role"] == "tool"]


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(request.param) as scripted:
        yield scripted


BREAKING_EDIT = ServerToolCall(
    "edit", {"path": "uses.py", "old_string": "value = helper(3)", "new_string": "value = helpr(3)"}
)


@pytest.mark.usefixtures("pylsp_on_path")
@pytest.mark.parametrize(
    "server", [[ServerReply(tool_calls=(BREAKING_EDIT,)), ServerReply(text="Edited.")]], indirect=True
)
async def test_an_edit_result_carries_the_undefined_name_pylsp_found(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    app = App.open(python_project(tmp_path, server.base_url))
    try:
        conversation = await app.conversation(interactive=False, first_prompt="edit", env={})
        outcome = await conversation.run_to_completion("edit")
        assert outcome.text == "Edited."
        first, second = server.requests
        assert tool_names(first)[:9] == [
            *("view", "ls", "glob", "grep", "definition", "references", "hover", "symbols", "diagnostics"),
        ]
        [edited] = tool_results(second)
        assert "uses.py:3:9: error: undefined name 'helpr' (pyflakes)" in edited
        assert [status.state for status in app.language_servers() if status.name == "pylsp"] == ["running"]
    finally:
        await app.aclose()
    assert [status.state for status in app.language_servers() if status.name == "pylsp"] == ["stopped"]


TASK = ServerToolCall(
    "task",
    {"subagent_type": "explore", "description": "find uses", "prompt": "Where is helper used?"},
)
REFERENCES = ServerToolCall("references", {"path": "helpers.py", "line": 1, "symbol": "helper"})


@pytest.mark.usefixtures("pylsp_on_path")
@pytest.mark.parametrize(
    "server",
    [
        [
            ServerReply(tool_calls=(TASK,)),
            ServerReply(tool_calls=(REFERENCES,)),
            ServerReply(text="helper is used at helpers.py:5 and uses.py:3."),
            ServerReply(text="It is used in two places."),
        ]
    ],
    indirect=True,
)
async def test_explore_answers_where_a_name_is_used_from_references(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    app = App.open(python_project(tmp_path, server.base_url))
    try:
        conversation = await app.conversation(interactive=False, first_prompt="where", env={})
        outcome = await conversation.run_to_completion("Where is helper used?")
        assert outcome.text == "It is used in two places."
        _main, explore_first, explore_second, main_second = server.requests
        assert tool_names(explore_first) == [
            *("view", "ls", "glob", "grep", "definition", "references", "hover", "symbols", "diagnostics"),
        ]
        assert tool_results(explore_second) == [
            "helpers.py:1: def helper(x):\n"
            "helpers.py:5: print(helper(2))\n"
            "uses.py:1: from helpers import helper\n"
            "uses.py:3: value = helper(3)"
        ]
        [report] = tool_results(main_second)
        assert report.startswith("helper is used at helpers.py:5 and uses.py:3.")
    finally:
        await app.aclose()


@pytest.mark.parametrize("server", [[ServerReply(text="Hello.")]], indirect=True)
async def test_a_project_without_a_language_server_gets_no_language_tools(
    tmp_path: Path, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    app = App.open(python_project(tmp_path, server.base_url))
    try:
        conversation = await app.conversation(interactive=False, first_prompt="hi", env={})
        await conversation.run_to_completion("hi")
        [body] = server.requests
        assert tool_names(body)[:5] == ["view", "ls", "glob", "grep", "write"]
        view = next(tool for tool in body["tools"] if tool["function"]["name"] == "view")
        assert "diagnostics" not in json.dumps(view)
    finally:
        await app.aclose()
