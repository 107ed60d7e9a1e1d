"""agentic_fetch end to end: the app's main agent on the real openai provider (scripted loopback
server) delegates a question; the research sub-agent searches a recorded back end, fetches two
loopback pages at once through the SSRF-safe client, greps the large one, and answers with
sources. The cost rolls up, the temporary directory is gone, and private addresses are refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nestor.app import App
from nestor.config.loading import load_settings
from nestor.config.settings import Settings
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage, first_user_text
from nestor.tools.search_backends import RecordedBackend, SearchHit
from tests.server_routes import Route, router, tool_texts
from tests.tools.web.server import WebServer, serve

QUESTION = "What does example 3.0 remove, and what does function 7 raise?"


@pytest.fixture
def web() -> Iterator[WebServer]:
    with serve() as server:
        yield server


def settings_for(tmp_path: Path, base_url: str) -> Settings:
    project = tmp_path / "project"
    project.mkdir()
    (project / "nestor.toml").write_text(
        '[models]\nlarge = "loop:large-model"\nsmall = "loop:small-model"\n\n'
        f'[providers.loop]\ntype = "openai"\nbase_url = "{base_url}"\n\n'
        '[web]\nallow_ranges = ["127.0.0.1/32"]\n',
        encoding="utf-8",
    )
    env = {"NESTOR_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    return load_settings(
        project, env=env, user_config_path=tmp_path / "none.toml", overrides={"yolo": True}, trusted=True
    )


async def test_the_main_agent_delegates_research_that_searches_fetches_greps_and_cites(
    tmp_path: Path, web: WebServer
) -> None:
    article, huge = web.url("/article.html"), web.url("/huge.html")

    def grep_saved(body: dict[str, Any]) -> ServerReply:
        texts = tool_texts(body)
        assert "Version 3.0 removes the" in texts  # the small page came inline
        saved = re.search(r"it was saved to (\S+?)\.\n", texts)
        assert saved, texts[:2000]
        return ServerReply(
            tool_calls=(ServerToolCall("grep", {"pattern": "Function 7 takes", "path": saved.group(1)}),)
        )

    def answer(body: dict[str, Any]) -> ServerReply:
        assert "ValueError for NaN" in tool_texts(body)
        return ServerReply(
            text="3.0 removes the legacy flag; function 7 raises ValueError for NaN.\n\n"
            f"Sources\n{article}\n{huge}",
            usage=ServerUsage(900, 40),
        )

    def conclude(body: dict[str, Any]) -> ServerReply:
        assert "Sources" in tool_texts(body) and "[agent ses_" in tool_texts(body)
        return ServerReply(text="It removes the legacy flag; function 7 raises ValueError for NaN.")

    routes: dict[str, list[ServerReply | Route]] = {
        "MAIN": [
            ServerReply(
                tool_calls=(ServerToolCall("agentic_fetch", {"prompt": QUESTION}),),
                usage=ServerUsage(500, 20),
            ),
            conclude,
        ],
        QUESTION: [
            ServerReply(
                tool_calls=(ServerToolCall("web_search", {"query": "example 3.0 release notes"}),),
                usage=ServerUsage(300, 10),
            ),
            ServerReply(
                tool_calls=(
                    ServerToolCall("web_fetch", {"url": article}),
                    ServerToolCall("web_fetch", {"url": huge}),
                ),
                usage=ServerUsage(400, 10),
            ),
            grep_saved,
            answer,
        ],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        settings = settings_for(tmp_path, server.base_url)
        app = App.open(settings)
        try:
            app.tools.search_backend = RecordedBackend(
                {
                    "example 3.0 release notes": [
                        SearchHit("Release notes", article, "3.0"),
                        SearchHit("Reference", huge),
                    ]
                }
            )
            agent = await app.start_main_agent(env={"HOME": str(tmp_path)})
            result = await app.coordinator.run(agent.session_id, "MAIN: look it up")
            requests = list(server.requests)
            [child] = app.sessions.children(agent.session_id)
            root = app.sessions.get(agent.session_id)
        finally:
            app.close()

    assert result.stop_reason == "completed", result.text
    assert result.text == "It removes the legacy flag; function 7 raises ValueError for NaN."
    assert child.agent_name == "agentic_fetch" and child.model == "loop:small-model"
    # The research agent had only its own tools.
    child_request = next(r for r in requests if first_user_text(r).startswith(QUESTION))
    assert child_request["model"] == "small-model"
    assert {t["function"]["name"] for t in child_request["tools"]} == {
        "web_search",
        "web_fetch",
        "view",
        "grep",
        "glob",
    }
    assert web.state.hits["/article.html"] == 1 and web.state.hits["/huge.html"] == 1
    # Usage rolled up: the main agent's 2 requests and the research agent's 4.
    assert child.usage.requests == 4
    assert root.usage.requests >= 6 and root.usage.input_tokens >= 500 + 300 + 400 + 900
    assert list((tmp_path / "home" / "fetch").iterdir()) == []  # its temporary directory is gone


async def test_a_url_is_fetched_first_and_private_addresses_are_refused(
    tmp_path: Path, web: WebServer
) -> None:
    article = web.url("/article.html")
    private = article.replace("127.0.0.1", "127.0.0.2")

    def answer(body: dict[str, Any]) -> ServerReply:
        prompt = first_user_text(body)
        assert "<webpage_content>" in prompt and "Version 3.0 removes the" in prompt
        return ServerReply(text=f"The legacy flag.\n\nSources\n{article}")

    def conclude(body: dict[str, Any]) -> ServerReply:
        texts = tool_texts(body)
        assert "The legacy flag." in texts
        assert "127.0.0.2" in texts and "allow_ranges" in texts  # the refusal says what to do
        return ServerReply(text="done")

    routes: dict[str, list[ServerReply | Route]] = {
        "MAIN": [
            ServerReply(
                tool_calls=(
                    ServerToolCall(
                        "agentic_fetch", {"prompt": "Summarise the release notes", "url": article}
                    ),
                    ServerToolCall("fetch", {"url": private}),
                    ServerToolCall("fetch", {"url": "http://169.254.169.254/latest/meta-data/"}),
                )
            ),
            conclude,
        ],
        "Summarise the release notes": [answer],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        app = App.open(settings_for(tmp_path, server.base_url))
        try:
            agent = await app.start_main_agent(env={"HOME": str(tmp_path)})
            result = await app.coordinator.run(agent.session_id, "MAIN: go")
        finally:
            app.close()
    assert result.text == "done"
    assert web.state.hits["/article.html"] == 1  # fetched once, by the tool, before the sub-agent ran
    results = [
        part
        for message in agent.history
        for part in getattr(message, "parts", [])
        if part.part_kind == "tool-return"
    ]
    metadata_fetch = [p for p in results if p.tool_name == "fetch"]
    assert all(p.outcome == "failed" for p in metadata_fetch)
    assert "metadata" in str(metadata_fetch[1].content) or "169.254.169.254" in str(metadata_fetch[1].content)


async def test_the_temporary_directory_is_removed_on_error_and_on_cancel(tmp_path: Path) -> None:
    import asyncio

    from nestor.runtime.features.agentic_fetch import AgenticFetchTool
    from nestor.testing import ScriptedModel, call, reply
    from nestor.tools.web.pages import FetchError
    from tests.runtime.tree_support import TreeHarness

    started = asyncio.Event()

    async def fetch_page(url: str) -> str:
        if "refused" in url:
            raise FetchError("http://refused.example/ resolves to 10.0.0.1, a private address")
        started.set()
        await asyncio.sleep(30)
        return ""

    workspaces = tmp_path / "ws"
    harness = TreeHarness(tmp_path, models={})
    tool = AgenticFetchTool(harness.tree, fetch_page, workspace_root=workspaces)
    harness.extra_tools["agentic_fetch"] = lambda: tool
    model = ScriptedModel(
        [call("agentic_fetch", {"prompt": "read it", "url": "http://refused.example/"}), reply("ok")]
    )
    main = harness.main(model, ("view", "agentic_fetch"))
    await main.run("go")
    [result] = [p for m in main.history for p in getattr(m, "parts", []) if p.part_kind == "tool-return"]
    assert result.outcome == "failed" and "private address" in str(result.content)
    assert list(workspaces.iterdir()) == []

    hanging = harness.main(
        ScriptedModel([call("agentic_fetch", {"prompt": "read it", "url": "http://slow.example/"})]),
        ("view", "agentic_fetch"),
    )
    run = asyncio.create_task(hanging.run("go"))
    await asyncio.wait_for(started.wait(), 5)
    assert len(list(workspaces.iterdir())) == 1
    hanging.cancel()
    assert (await run).stop_reason == "cancelled"
    assert list(workspaces.iterdir()) == []
