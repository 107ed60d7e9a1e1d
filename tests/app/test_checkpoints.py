"""Checkpoints through the app: the factory's hook on every agent of the tree, undo, rewind and fork."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from nestor.app import App, Conversation
from nestor.app.checkpoints import stored_session_checkpoints
from nestor.config.settings import Settings
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.app.test_conversation import settings_for as conversation_settings
from tests.server_routes import Route, router

ALLOW = '[permissions]\nallow = ["bash", "write", "edit", "task"]\n'


def settings_for(root: Path, base_url: str, extra: str = "") -> Settings:
    """A trusted project whose agents may run bash and write files, on the scripted server."""
    return conversation_settings(root, base_url, f"\n{ALLOW}{extra}")


@asynccontextmanager
async def conversation_on(
    tmp_path: Path, routes: dict[str, list[ServerReply | Route]], extra: str = ""
) -> AsyncIterator[tuple[App, Conversation]]:
    with ScriptedOpenAIServer(router(routes)) as server:
        app = App.open(settings_for(tmp_path, server.base_url, extra))
        try:
            yield app, await app.conversation(interactive=False, env={})
        finally:
            await app.aclose()


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def task(description: str, prompt: str) -> ServerToolCall:
    return ServerToolCall("task", {"description": description, "prompt": prompt, "subagent_type": "general"})


async def test_undo_puts_back_what_a_bash_command_created_changed_and_deleted(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "change.txt").write_text("before\n")
    (project / "delete.txt").write_text("delete me\n")
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(bash("echo new > new.txt; echo after > change.txt; rm delete.txt"),)),
            ServerReply(text="done"),
        ]
    }
    async with conversation_on(tmp_path, routes) as (_app, conversation):
        outcome = await conversation.run_to_completion("USER: change things")
        assert outcome.text == "done"
        checkpoints = conversation.checkpoints
        assert checkpoints is not None
        assert [(p.number, p.text, p.files) for p in checkpoints.prompts()] == [(1, "USER: change things", 3)]

        plan = await checkpoints.plan_undo()
        assert plan.title.startswith("prompt 1 (USER: change things)")
        assert sorted((f.path, f.action) for f in plan.files) == [
            ("change.txt", "restore"),
            ("delete.txt", "create"),
            ("new.txt", "delete"),
        ]
        await checkpoints.apply(plan)

    assert (project / "change.txt").read_text() == "before\n"
    assert (project / "delete.txt").read_text() == "delete me\n"
    assert not (project / "new.txt").exists()


async def test_two_parallel_sub_agents_one_undone_alone_and_the_refusal(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shared.txt").write_text("shared\n")
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=(task("writes a", "AGENT-A: write a"), task("writes b", "AGENT-B: write b"))
            ),
            ServerReply(tool_calls=(bash("echo main >> shared.txt"),)),
            ServerReply(text="both done"),
        ],
        "AGENT-A": [
            ServerReply(tool_calls=(ServerToolCall("write", {"path": "a.txt", "content": "from a\n"}),)),
            ServerReply(
                tool_calls=(
                    ServerToolCall(
                        "edit", {"path": "shared.txt", "old_string": "shared", "new_string": "by a"}
                    ),
                )
            ),
            ServerReply(text="a written"),
        ],
        "AGENT-B": [
            ServerReply(tool_calls=(ServerToolCall("write", {"path": "b.txt", "content": "from b\n"}),)),
            ServerReply(text="b written"),
        ],
    }
    async with conversation_on(tmp_path, routes) as (app, conversation):
        await conversation.run_to_completion("USER: delegate")
        checkpoints = conversation.checkpoints
        assert checkpoints is not None
        children = {child.title: child.id for child in app.sessions.children(conversation.session_id)}
        authors = sorted((c.path, c.agent_id or "") for row in checkpoints.checkpoints() for c in row.changes)
        assert authors == sorted(
            [
                ("a.txt", children["writes a"]),
                ("b.txt", children["writes b"]),
                ("shared.txt", children["writes a"]),
                ("shared.txt", conversation.session_id),  # the main agent's command, after both
            ]
        )

        plan_b = await checkpoints.plan_agent_undo(children["writes b"])
        assert [f.path for f in plan_b.files] == ["b.txt"] and plan_b.refusal is None
        await checkpoints.apply(plan_b)
        assert not (project / "b.txt").exists() and (project / "a.txt").exists()

        plan_a = await checkpoints.plan_agent_undo(children["writes a"])
        assert plan_a.refusal is not None and "shared.txt" in plan_a.refusal

    assert (project / "shared.txt").read_text() == "by a\nmain\n"


async def test_rewind_of_the_conversation_keeps_the_whole_of_it_in_a_fork(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(bash("echo one > f.txt"),)),
            ServerReply(text="first done"),
            ServerReply(tool_calls=(bash("echo two > f.txt"),)),
            ServerReply(text="second done"),
        ]
    }
    async with conversation_on(tmp_path, routes) as (app, conversation):
        await conversation.run_to_completion("USER: one")
        await conversation.run_to_completion("USER: two")
        session_id = conversation.session_id
        conversation.close()
        checkpoints = stored_session_checkpoints(app.settings, app.database, app.sessions.get(session_id))
        count = app.messages.count(session_id)

        kept = checkpoints.rewind_conversation(2)

        assert [p.text for p in checkpoints.prompts()] == ["USER: one"]
        assert app.messages.count(kept.id) == count
        assert app.sessions.get(kept.id).metadata["forked_from"] == session_id
        assert (tmp_path / "project" / "f.txt").read_text() == "two\n"  # the code is left as it is
        assert [p.number for p in stored_session_checkpoints(app.settings, app.database, kept).prompts()] == [
            1,
            2,
        ]


async def test_checkpoints_can_be_turned_off(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [ServerReply(tool_calls=(bash("echo x > f.txt"),)), ServerReply(text="done")]
    }
    async with conversation_on(tmp_path, routes, "\n[checkpoints]\nenabled = false\n") as (app, conversation):
        await conversation.run_to_completion("USER: write")
        assert conversation.checkpoints is not None and conversation.checkpoints.checkpoints() == []
        assert not (app.settings.data_dir / "checkpoints").exists()
