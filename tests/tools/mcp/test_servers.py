"""MCP servers through the real SDK: start, list, call, crash, hang, list_changed, HTTP."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from nestor.config.sections import McpServerConfig
from nestor.config.settings import ProjectServer
from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext, ToolResult
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.servers import McpServers
from tests.tools.mcp.support import http_demo_server, stdio_config

pytestmark = pytest.mark.timeout(60)

Open = Callable[..., McpServers]


@pytest.fixture
async def open_servers(tmp_path: Path) -> AsyncIterator[Open]:
    opened: list[McpServers] = []

    def open_(configs: dict[str, McpServerConfig], notices: list[str] | None = None) -> McpServers:
        servers = McpServers(
            configs,
            catalogue=ToolCatalogue(),
            log_dir=tmp_path / "logs",
            project_root=tmp_path,
            notify=(notices if notices is not None else []).append,
        )
        opened.append(servers)
        return servers

    yield open_
    for servers in opened:
        await servers.close()


async def call(servers: McpServers, name: str, arguments: dict[str, object], tmp_path: Path) -> ToolResult:
    (tool,) = servers.tools([name])
    result = await tool.run(
        tool.params_model.model_validate(arguments), ToolContext(tmp_path, scratch_dir=tmp_path / "scratch")
    )
    assert isinstance(result, ToolResult)
    return result


async def test_a_stdio_server_lists_its_tools_with_their_schemas_and_logs_its_stderr(
    open_servers: Open, tmp_path: Path
) -> None:
    catalogue_names = await (servers := open_servers({"demo": stdio_config()})).tool_names()
    assert "mcp__demo__echo" in catalogue_names and "mcp__demo__crash" in catalogue_names
    (echo,) = servers.tools(["mcp__demo__echo"])
    assert echo.description == "Return the text, prefixed with 'echo:'."
    assert echo.parameters_schema()["properties"]["text"]["type"] == "string"
    assert echo.parameters_schema()["required"] == ["text"]
    assert servers.read_only("mcp__demo__echo") and not servers.read_only("mcp__demo__crash")

    result = await call(servers, "mcp__demo__echo", {"text": "hi"}, tmp_path)

    assert result.content == "echo: hi" and not result.is_error
    log = (tmp_path / "logs" / "demo.log").read_text()
    assert "echo called with 'hi'" in log


async def test_the_tools_are_registered_in_the_catalogue_with_the_read_only_trait(tmp_path: Path) -> None:
    catalogue = ToolCatalogue()
    servers = McpServers(
        {"demo": stdio_config()}, catalogue=catalogue, log_dir=tmp_path, project_root=tmp_path
    )
    try:
        await servers.tool_names()
        assert catalogue.has("mcp__demo__echo", "read_only")
        assert "mcp__demo__hang" in catalogue and not catalogue.has("mcp__demo__hang", "read_only")
        (built,) = catalogue.build(["mcp__demo__echo"])
        assert built.name == "mcp__demo__echo"
        await servers.tool_names()  # listing again registers nothing twice
    finally:
        await servers.close()


async def test_images_resources_and_structured_content_become_the_result(
    open_servers: Open, tmp_path: Path
) -> None:
    servers = open_servers({"demo": stdio_config()})
    await servers.tool_names()

    image = await call(servers, "mcp__demo__picture", {}, tmp_path)
    (saved,) = image.metadata["files"]
    assert saved in image.content and saved.startswith(str(tmp_path / "scratch" / "mcp"))
    assert Path(saved).read_bytes().startswith(b"\x89PNG")  # noqa: ASYNC240
    assert "image/png" in image.content
    document = await call(servers, "mcp__demo__document", {}, tmp_path)
    assert document.content == "[resource file:///notes.txt]\nthe notes"
    total = await call(servers, "mcp__demo__total", {"numbers": [1, 2, 3]}, tmp_path)
    assert '"sum": 6' in total.content


async def test_bad_arguments_are_the_tools_error_and_the_server_keeps_running(
    open_servers: Open, tmp_path: Path
) -> None:
    servers = open_servers({"demo": stdio_config()})
    await servers.tool_names()
    result = await call(servers, "mcp__demo__echo", {"wrong": 1}, tmp_path)
    assert result.is_error and "text" in result.content
    assert (
        await call(servers, "mcp__demo__echo", {"text": "still here"}, tmp_path)
    ).content == "echo: still here"


async def test_a_json_rpc_error_is_the_tools_error_and_no_restart(open_servers: Open, tmp_path: Path) -> None:
    servers = open_servers({"demo": stdio_config()})
    await servers.tool_names()
    with pytest.raises(ToolError, match="MCP server 'demo': refuse: no such item"):
        await call(servers, "mcp__demo__refuse", {}, tmp_path)
    assert servers.connection("demo").status == "running"
    assert (await call(servers, "mcp__demo__echo", {"text": "same"}, tmp_path)).content == "echo: same"
    assert (tmp_path / "logs" / "demo.log").read_text().count("starting") == 1


async def test_a_crashed_server_is_a_clear_tool_error_and_restarts_on_the_next_call(
    open_servers: Open, tmp_path: Path
) -> None:
    servers = open_servers({"demo": stdio_config()})
    await servers.tool_names()

    with pytest.raises(
        ToolError, match=r"MCP server 'demo': the call to crash failed.*started again on the next call"
    ):
        await call(servers, "mcp__demo__crash", {}, tmp_path)
    assert servers.connection("demo").status == "failed"

    assert (await call(servers, "mcp__demo__echo", {"text": "back"}, tmp_path)).content == "echo: back"
    assert servers.connection("demo").status == "running"
    assert (tmp_path / "logs" / "demo.log").read_text().count("starting") == 2


async def test_a_hanging_call_times_out_and_the_next_call_gets_a_fresh_server(
    open_servers: Open, tmp_path: Path
) -> None:
    servers = open_servers({"demo": stdio_config(tool_timeout=1)})
    await servers.tool_names()
    started = asyncio.get_running_loop().time()

    with pytest.raises(ToolError, match=r"the call to hang did not finish within 1 s"):
        await call(servers, "mcp__demo__hang", {}, tmp_path)

    assert asyncio.get_running_loop().time() - started < 20
    assert (await call(servers, "mcp__demo__echo", {"text": "again"}, tmp_path)).content == "echo: again"


async def test_a_server_that_hangs_at_start_times_out_and_leaves_its_tools_out(open_servers: Open) -> None:
    notices: list[str] = []
    servers = open_servers(
        {"stuck": stdio_config("--hang-at-start", timeout=1), "demo": stdio_config()}, notices
    )

    names = await servers.tool_names()

    assert names and all(name.startswith("mcp__demo__") for name in names)
    assert len(notices) == 1 and "MCP server 'stuck': it did not start within 1 s" in notices[0]
    assert "its log is" in notices[0]


async def test_a_missing_command_is_one_line_naming_the_server(open_servers: Open) -> None:
    notices: list[str] = []
    servers = open_servers({"gone": McpServerConfig(command="/nonexistent/mcp-server")}, notices)
    assert await servers.tool_names() == []
    assert notices == [notices[0]] and "MCP server 'gone': it could not start" in notices[0]
    assert "\n" not in notices[0]


async def test_disabled_servers_never_start(open_servers: Open) -> None:
    servers = open_servers(
        {"demo": stdio_config(), "off": McpServerConfig(command=sys.executable, enabled=False)}
    )
    await servers.tool_names()
    states = {state.name: state for state in await servers.states()}
    assert states["off"].status == "disabled" and states["demo"].status == "running"
    assert "mcp__demo__echo" in states["demo"].tools


async def test_a_projects_server_starts_only_when_approved(tmp_path: Path) -> None:
    pid_file = tmp_path / "demo.pid"
    config = stdio_config().model_copy(update={"env": {"DEMO_PID_FILE": str(pid_file)}})
    asked: list[str] = []

    async def approve(server: ProjectServer) -> bool:
        asked.append(server.name)
        return len(asked) > 2  # no, no, then yes

    definition = ProjectServer.of_config("demo", ".mcp.json", config)
    servers = McpServers(
        {"demo": config, "mine": stdio_config()},
        catalogue=ToolCatalogue(),
        log_dir=tmp_path / "logs",
        project_root=tmp_path,
        project={"demo": definition},
        approve=approve,
    )
    try:
        assert not any(name.startswith("mcp__demo__") for name in await servers.tool_names())
        states = {state.name: state for state in await servers.states()}
        assert (states["demo"].status, states["demo"].project) == ("not approved", definition)
        assert (states["mine"].status, states["mine"].project) == ("running", None)  # the user's own
        assert not pid_file.exists()
        assert "mcp__demo__echo" in await servers.tool_names()
        await servers.tool_names()
        assert asked == ["demo", "demo", "demo"] and pid_file.exists()  # once approved, not asked again
    finally:
        await servers.close()
    never = McpServers({"demo": config}, catalogue=ToolCatalogue(), log_dir=tmp_path, project_root=tmp_path)
    never.project["demo"] = definition  # a project's server and nobody to approve it: it never starts
    assert await never.tool_names() == []


async def test_tools_list_changed_is_honoured(open_servers: Open, tmp_path: Path) -> None:
    servers = open_servers({"demo": stdio_config()})
    assert "mcp__demo__extra" not in await servers.tool_names()

    await call(servers, "mcp__demo__add_tool", {}, tmp_path)
    for _ in range(50):
        if "mcp__demo__extra" in await servers.tool_names():
            break
        await asyncio.sleep(0.1)

    assert (await call(servers, "mcp__demo__extra", {}, tmp_path)).content == "extra!"


async def test_a_streamable_http_server_lists_and_calls(open_servers: Open, tmp_path: Path) -> None:
    with http_demo_server() as url:
        servers = open_servers({"remote": McpServerConfig(url=url, headers={"X-Test": "1"})})
        assert "mcp__remote__echo" in await servers.tool_names()
        assert (
            await call(servers, "mcp__remote__echo", {"text": "over http"}, tmp_path)
        ).content == "echo: over http"
        await servers.close()


async def test_an_older_servers_sse_endpoint_lists_and_calls(open_servers: Open, tmp_path: Path) -> None:
    with http_demo_server("sse") as url:
        servers = open_servers({"old": McpServerConfig(url=url, transport="sse")})
        assert "mcp__old__echo" in await servers.tool_names()
        result = await call(servers, "mcp__old__echo", {"text": "over sse"}, tmp_path)
        assert result.content == "echo: over sse"
        await servers.close()
