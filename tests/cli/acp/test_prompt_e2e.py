"""Prompts with images and resources over ACP, end to end; session/load replays the image."""

from __future__ import annotations

import base64
from pathlib import Path

import acp
import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, first_user_text
from tests.cli.acp.support import RecordingClient, acp_env, nestor_acp
from tests.cli.support import git_repo
from tests.providers.local.gguf_writer import write_chat_gguf
from tests.server_routes import Route, router

pytestmark = pytest.mark.timeout(120)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-a-tiny-image-").decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0-another-image-").decode()


async def test_an_image_and_resources_reach_the_model_and_load_replays_the_image(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/app.py": "def greet():\n    return 'hi'\n"})
    app_py = repo / "src" / "app.py"
    prompt = [
        acp.text_block("USER: does this screenshot match the code?"),
        acp.image_block(PNG, "image/png"),
        acp.resource_block(acp.embedded_text_resource(app_py.as_uri(), "def greet():\n    return 'hi'\n")),
        acp.resource_block(
            acp.embedded_blob_resource((repo / "old.jpg").as_uri(), JPEG, mime_type="image/jpeg")
        ),
        acp.resource_link_block("README.md", (repo / "README.md").as_uri()),
    ]
    routes: dict[str, list[ServerReply | Route]] = {"USER": [ServerReply(text="Yes, it greets with 'hi'.")]}
    with ScriptedOpenAIServer(router(routes)) as server:
        env = acp_env(tmp_path, server)
        async with nestor_acp(RecordingClient(), repo, env) as conn:
            initialized = await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=prompt)
        loader = RecordingClient()
        async with nestor_acp(loader, repo, env) as conn:
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(repo), session_id=session.session_id)

    capabilities = initialized.agent_capabilities
    assert capabilities is not None and capabilities.prompt_capabilities is not None
    assert capabilities.prompt_capabilities.image is True
    assert capabilities.prompt_capabilities.embedded_context is True
    assert done.stop_reason == "end_turn"
    [asked] = [body for body in server.requests if first_user_text(body).startswith("USER")]
    [user] = [message for message in asked["messages"] if message["role"] == "user"]
    assert user["content"] == [
        {"type": "text", "text": "USER: does this screenshot match the code?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {
            "type": "text",
            "text": f"<context source=\"{app_py}\">\ndef greet():\n    return 'hi'\n\n</context>\n"
            f"(attached: {repo / 'old.jpg'})",
        },
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}"}},
        {"type": "text", "text": f"[README.md]({repo / 'README.md'})"},
    ]
    replayed = [update["content"] for update in loader.of_kind("user_message_chunk")]
    assert [block["type"] for block in replayed] == ["text", "image", "text", "image", "text"]
    assert replayed[0]["text"] == "USER: does this screenshot match the code?"
    assert replayed[1] == {"type": "image", "data": PNG, "mimeType": "image/png"}
    assert replayed[3] == {"type": "image", "data": JPEG, "mimeType": "image/jpeg"}
    assert loader.text() == "Yes, it greets with 'hi'."


async def test_an_image_that_is_not_base64_is_an_error_and_the_session_goes_on(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    routes: dict[str, list[ServerReply | Route]] = {"USER": [ServerReply(text="Fine.")]}
    with ScriptedOpenAIServer(router(routes)) as server:
        async with nestor_acp(RecordingClient(), repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            with pytest.raises(acp.RequestError) as caught:
                await conn.prompt(
                    session_id=session.session_id,
                    prompt=[acp.text_block("USER: look"), acp.image_block("%%%", "image/png")],
                )
            after = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("USER: text only")]
            )
    assert "the image data is not base64" in str(caught.value.data)
    assert after.stop_reason == "end_turn"
    asked = [first_user_text(body) for body in server.requests if first_user_text(body).startswith("USER")]
    assert asked == ["USER: text only"]  # the refused prompt never went out, nor was it kept


async def test_an_image_to_the_embedded_model_is_refused_in_one_line_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    gguf = write_chat_gguf(tmp_path / "models" / "coder.gguf")  # the embedded engine reads text only
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    with ScriptedOpenAIServer([]) as server:
        env = acp_env(tmp_path, server)
        async with nestor_acp(RecordingClient(), repo, env, model=f"local:{gguf}") as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            with pytest.raises(acp.RequestError) as caught:
                await conn.prompt(
                    session_id=session.session_id,
                    prompt=[acp.text_block("what is on this screenshot?"), acp.image_block(PNG, "image/png")],
                )
            cost = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/cost")])
            [listed] = (await conn.list_sessions(cwd=str(repo))).sessions
    message = str(caught.value)
    assert f"the model local:{gguf} does not take images" in message and "\n" not in message
    assert caught.value.data is not None
    assert caught.value.data["hint"] == "send the prompt without them, or switch to a model that takes images"
    assert cost.stop_reason == "end_turn"  # the session is still there
    assert not listed.title  # the refused prompt was not kept, not even as a title
