"""fs/* over ACP: where the client offers its files, the file tools read its buffers and write through it."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.acp.support import RecordingClient, acp_env, fs_capabilities, nestor_acp
from tests.cli.support import git_repo
from tests.server_routes import tool_texts

pytestmark = pytest.mark.timeout(120)


async def test_view_sees_the_unsaved_buffer_and_edit_and_write_land_in_the_editor(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/app.py": "def greet():\n    return 'hi'\n"})
    app_py = str(repo / "src/app.py")
    unsaved = "def greet():\n    return 'hi there'  # unsaved\n"
    client = RecordingClient(answers=["allow_once", "allow_once"], buffers={app_py: unsaved})
    script = [
        ServerReply(tool_calls=(ServerToolCall("view", {"path": "src/app.py"}),)),
        ServerReply(
            tool_calls=(
                ServerToolCall(
                    "edit", {"path": "src/app.py", "old_string": "hi there", "new_string": "hello"}
                ),
                ServerToolCall("write", {"path": "docs/notes.md", "content": "# notes\n"}),
            )
        ),
        ServerReply(text="Edited in the editor."),
    ]
    with ScriptedOpenAIServer(script) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1, client_capabilities=fs_capabilities())
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("greet")])

    assert done.stop_reason == "end_turn"
    assert "return 'hi there'  # unsaved" in tool_texts(server.requests[1])
    assert client.writes == {
        app_py: "def greet():\n    return 'hello'  # unsaved\n",
        str(repo / "docs/notes.md"): "# notes\n",
    }
    # The editor saves when the user says so: nestor wrote nothing to the disk itself.
    assert (repo / "src/app.py").read_text() == "def greet():\n    return 'hi'\n"
    assert not (repo / "docs/notes.md").exists()
    assert "Edited src/app.py: 1 replacement." in tool_texts(server.requests[2])


async def test_without_fs_the_disk_is_used_and_the_client_is_never_asked(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/app.py": "X = 1\n"})
    client = RecordingClient(answers=["allow_once"])
    script = [
        ServerReply(tool_calls=(ServerToolCall("view", {"path": "src/app.py"}),)),
        ServerReply(tool_calls=(ServerToolCall("write", {"path": "src/app.py", "content": "X = 2\n"}),)),
        ServerReply(text="done"),
    ]
    with ScriptedOpenAIServer(script) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("bump")])

    assert client.reads == [] and client.writes == {}
    assert (repo / "src/app.py").read_text() == "X = 2\n"
