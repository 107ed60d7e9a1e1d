"""nestor's public API: ``nestor.api`` names exactly the supported surface, and importing it is cheap.

The list below is the contract with users who embed nestor: adding or removing a name is a
deliberate change of this test (as httpx guards its ``__all__``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nestor.api
import nestor.extensions
from nestor.api import (
    App,
    Event,
    Hook,
    RunState,
    ScriptedOpenAIServer,
    ServerReply,
    ServerToolCall,
    ServerUsage,
    Settings,
    TextDelta,
    load_settings,
)

PUBLIC = [
    "AgentDefinition",
    "AgentFileError",
    "AgentFinished",
    "AgentOptions",
    "AgentSpec",
    "AgentStarted",
    "App",
    "AssistantMessage",
    "BackgroundNotice",
    "CanUseTool",
    "Client",
    "Compacted",
    "CompactionStarted",
    "ConfigError",
    "ContentBlock",
    "Conversation",
    "DelegationError",
    "ErrorEvent",
    "Event",
    "Hook",
    "HookAction",
    "HookCallback",
    "HookContext",
    "HookEvent",
    "HookMatcher",
    "Message",
    "MissingCredentialsError",
    "ModelRequestError",
    "NestorError",
    "Outcome",
    "PermissionAnswer",
    "PermissionAsked",
    "PermissionDeniedError",
    "PermissionMode",
    "PermissionRequest",
    "PermissionRequested",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "PermissionWithdrawn",
    "PromptQueued",
    "ProviderError",
    "Remind",
    "RequestFinished",
    "ResultMessage",
    "Retrying",
    "RunResult",
    "RunState",
    "ScriptedAnthropicServer",
    "ScriptedModel",
    "ScriptedOpenAIServer",
    "SearchBackend",
    "SearchHit",
    "ServerReply",
    "ServerToolCall",
    "ServerUsage",
    "Session",
    "SessionInUseError",
    "SessionNotFoundError",
    "SessionTitled",
    "Settings",
    "Stop",
    "StopReason",
    "StoreError",
    "SystemMessage",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "TodosUpdated",
    "Tool",
    "ToolCatalogue",
    "ToolContext",
    "ToolError",
    "ToolFinished",
    "ToolPermissionContext",
    "ToolResult",
    "ToolResultBlock",
    "ToolStarted",
    "ToolUseBlock",
    "Trait",
    "UnknownAgentError",
    "UnknownProviderError",
    "Usage",
    "UserMessage",
    "load_settings",
    "query",
]

EXTENSIONS = [
    "Hook",
    "HookAction",
    "Remind",
    "RunState",
    "SearchBackend",
    "SearchHit",
    "Stop",
    "Tool",
    "ToolCatalogue",
    "ToolContext",
    "ToolResult",
    "Trait",
]


def test_the_public_api_is_exactly_this_list() -> None:
    assert nestor.api.__all__ == PUBLIC


def test_every_public_name_imports() -> None:
    for name in PUBLIC:
        assert getattr(nestor.api, name) is not None, name
    star: dict[str, object] = {}
    exec("from nestor.api import *", star)  # what a user's star import gets
    assert sorted(set(star) - {"__builtins__"}) == sorted(PUBLIC)
    assert set(PUBLIC) <= set(dir(nestor.api))


def test_the_extension_points_are_gathered_in_one_module_and_are_public() -> None:
    assert nestor.extensions.__all__ == EXTENSIONS
    for name in EXTENSIONS:
        assert getattr(nestor.extensions, name) is getattr(nestor.api, name), name
    assert set(EXTENSIONS) <= set(PUBLIC)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    internal = "SessionAgent"
    for module in (nestor.api, nestor.extensions):
        try:
            getattr(module, internal)
        except AttributeError as error:
            assert internal in str(error) and module.__name__ in str(error)
        else:
            raise AssertionError(f"{module.__name__}.SessionAgent should not be public")


def _modules_after(statement: str) -> list[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


def test_importing_nestor_imports_nothing_else_of_nestor_or_its_dependencies() -> None:
    loaded = _modules_after("import nestor")
    assert [name for name in loaded if name.startswith("nestor")] == ["nestor"]
    assert not {"pydantic", "pydantic_ai", "httpx", "typer"} & set(loaded)


def test_importing_the_api_imports_no_runtime_until_a_name_is_used() -> None:
    loaded = _modules_after("import nestor.api, nestor.extensions")
    assert sorted(name for name in loaded if name.startswith("nestor")) == [
        "nestor",
        "nestor.api",
        "nestor.extensions",
    ]
    assert "pydantic_ai" not in loaded


def _settings(root: Path, base_url: str) -> Settings:
    project = root / "project"
    project.mkdir()
    config = '[models]\nlarge = "scripted:m"\n\n[providers.scripted]\ntype = "openai"\n'
    config += f'base_url = "{base_url}"\n'
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "none.toml", trusted=True)


class CountRequests(Hook):
    """A user's hook: counts the main agent's requests."""

    def __init__(self) -> None:
        self.requests = 0

    async def before_request(self, state: RunState) -> None:
        self.requests += 1


async def test_an_embedder_runs_a_prompt_to_completion_with_the_api_alone(tmp_path: Path) -> None:
    usage = ServerUsage(prompt_tokens=10, completion_tokens=4)
    script = [ServerReply(text="Hello from nestor.", usage=usage)]
    with ScriptedOpenAIServer(script) as server:
        app = App.open(_settings(tmp_path, server.base_url))
        events: list[Event] = []
        unsubscribe = app.subscribe(events.append)
        hook = CountRequests()
        try:
            conversation = await app.conversation(
                interactive=False, first_prompt="say hello", env={}, hooks=[hook]
            )
            outcome = await conversation.run_to_completion("say hello")
        finally:
            unsubscribe()
            app.close()
    assert outcome.text == "Hello from nestor." and outcome.stop_reason == "completed"
    assert outcome.usage.input_tokens == 10 and outcome.usage.output_tokens == 4
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == "Hello from nestor."
    assert hook.requests == 1


class SeeRuns(Hook):
    """A user's hook for sub-agents: records whose requests it sees."""

    def __init__(self, seen: list[tuple[str, str]]) -> None:
        self.seen = seen

    async def before_request(self, state: RunState) -> None:
        self.seen.append((state.agent_type, state.agent_id))


async def test_an_embedders_subagent_hooks_see_each_subagent_and_not_the_main_agent(tmp_path: Path) -> None:
    task = {"description": "look around", "prompt": "list the files", "subagent_type": "explore"}
    script = [
        ServerReply(tool_calls=(ServerToolCall("task", task), ServerToolCall("task", task))),
        ServerReply(text="Two files."),
        ServerReply(text="Two files."),
        ServerReply(text="There are two files."),
    ]
    seen: list[tuple[str, str]] = []
    made: list[SeeRuns] = []

    def subagent_hooks() -> list[Hook]:
        made.append(SeeRuns(seen))
        return [made[-1]]

    with ScriptedOpenAIServer(script) as server:
        app = App.open(_settings(tmp_path, server.base_url))
        try:
            conversation = await app.conversation(
                interactive=False, first_prompt="what is here?", env={}, subagent_hooks=subagent_hooks
            )
            outcome = await conversation.run_to_completion("what is here?")
        finally:
            app.close()
    assert outcome.text == "There are two files."
    assert len(made) == 2  # one set of hooks per sub-agent: they never share state
    assert sorted(agent_type for agent_type, _ in seen) == ["explore", "explore"]
    assert len({agent_id for _, agent_id in seen}) == 2
    assert conversation.session_id not in {agent_id for _, agent_id in seen}
