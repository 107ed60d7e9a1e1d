from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nestor.app import App, title_from_prompt
from nestor.config.loading import load_settings
from nestor.config.sections import BUNDLED_LOCAL_MODEL, ModelConfig
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError
from nestor.core.events import SessionTitled
from nestor.providers.local.loader import DEFAULT_LOCAL_CONTEXT_WINDOW
from nestor.runtime.factory.prompt import builtin_agent_prompt
from nestor.runtime.factory.toolset import coder_tools
from nestor.runtime.features.compaction import Compaction
from nestor.runtime.features.large_results import LargeResultHook
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerUsage
from tests.providers.local.gguf_writer import COMPACT_TENSORS, LARGE_TENSORS, Tensors, write_chat_gguf


def test_title_is_the_first_line_cut_at_80_characters() -> None:
    assert title_from_prompt("  fix the bug\nin parser.py") == "fix the bug"
    assert title_from_prompt("x" * 100) == "x" * 77 + "..."
    assert title_from_prompt("   ") == ""


# -- titles of new sessions, over a loopback OpenAI-compatible server -------------------------


def write_project(root: Path, base_url: str, *, small: str | None = "scripted:small-model") -> Settings:
    project = root / "project"
    project.mkdir(exist_ok=True)
    config = '[models]\nlarge = "scripted:large-model"\n'
    if small is not None:
        config += f'small = "{small}"\n'
    config += f'\n[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True)


@pytest.fixture
def notices() -> list[str]:
    return []


@pytest.fixture
def opened(tmp_path: Path, notices: list[str]) -> Iterator[Callable[[Settings], App]]:
    apps: list[App] = []

    def open_app(settings: Settings) -> App:
        apps.append(App.open(settings, notify=notices.append))
        return apps[-1]

    yield open_app
    for app in apps:
        app.close()


async def test_a_new_session_is_titled_by_the_small_model(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    script = [
        ServerReply(text="Hello! How can I help?"),
        ServerReply(text="Title: Greeting the assistant", usage=ServerUsage(30, 4)),
    ]
    with ScriptedOpenAIServer(script) as server:
        app = opened(write_project(tmp_path, server.base_url))
        titled: list[SessionTitled] = []
        app.bus.subscribe(lambda event: titled.append(event) if isinstance(event, SessionTitled) else None)
        agent = await app.start_main_agent(title=title_from_prompt("say hello"), env={})
        assert app.sessions.get(agent.session_id).title == "say hello"
        await app.coordinator.run(agent.session_id, "say hello")
        assert app.titles is not None
        await app.titles.wait()
        requests = server.requests
    assert [request["model"] for request in requests] == ["large-model", "small-model"]
    assert not requests[1].get("stream") and "say hello" in json.dumps(requests[1]["messages"])
    session = app.sessions.get(agent.session_id)
    assert session.title == "Greeting the assistant"
    assert [(event.agent_id, event.title) for event in titled] == [(agent.session_id, session.title)]
    assert session.usage.requests == 2  # the title request is spending too


async def test_a_resumed_session_is_not_retitled(tmp_path: Path, opened: Callable[[Settings], App]) -> None:
    with ScriptedOpenAIServer([ServerReply(text="Again.")]) as server:
        app = opened(write_project(tmp_path, server.base_url))
        session = app.sessions.create(str(app.settings.project_root), title="old title")
        agent = await app.start_main_agent(session=session, env={})
        await app.coordinator.run(agent.session_id, "one more thing")
        requests = server.requests
    assert app.titles is None and len(requests) == 1
    assert app.sessions.get(agent.session_id).title == "old title"


async def test_a_small_model_that_cannot_be_built_leaves_the_first_line_title(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    with ScriptedOpenAIServer([ServerReply(text="Hi.")]) as server:
        # No ANTHROPIC_API_KEY in the environment: the small model cannot be built, the large one can.
        app = opened(write_project(tmp_path, server.base_url, small="anthropic:claude-haiku-4-5"))
        agent = await app.start_main_agent(title=title_from_prompt("hello\nthere"), env={})
        result = await app.coordinator.run(agent.session_id, "hello\nthere")
        requests = server.requests
    assert result.stop_reason == "completed" and app.titles is None and len(requests) == 1
    assert app.sessions.get(agent.session_id).title == "hello"


# -- context management wiring ----------------------------------------------------------------


async def test_the_main_agent_gets_the_context_settings_and_a_scratch_directory(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    settings = write_project(tmp_path, "http://127.0.0.1:9/v1")
    config = settings.project_root / "nestor.toml"
    config.write_text(
        config.read_text().replace(
            'large = "scripted:large-model"',
            'large = { model = "scripted:large-model", context_window = 32000 }',
        )
        + "\n[context]\ndisable_auto_compact = true\ncompact_threshold = 0.7\n"
        + "tool_result_max_tokens = 5000\n",
        encoding="utf-8",
    )
    env = {"NESTOR_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    app = opened(
        load_settings(settings.project_root, env=env, user_config_path=tmp_path / "none.toml", trusted=True)
    )
    agent = await app.start_main_agent(env={})

    setup = agent.setup
    assert setup.context is not None
    assert (setup.context.context_window, setup.context.auto_compact, setup.context.threshold) == (
        32000,
        False,
        0.7,
    )
    assert isinstance(setup.compactor, Compaction)
    summarizer = setup.compactor.summarizer
    assert summarizer is not None and summarizer.name == "scripted:large-model"
    assert setup.scratch_dir == tmp_path / "home" / "scratch" / agent.session_id
    large = [hook for hook in setup.hooks if isinstance(hook, LargeResultHook)]
    assert len(large) == 1 and large[0].max_tokens == 5000


async def test_deleting_a_session_removes_its_and_its_children_scratch_directories(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    app = opened(write_project(tmp_path, "http://127.0.0.1:9/v1"))
    parent = app.sessions.create(str(tmp_path))
    child = app.sessions.create(str(tmp_path), parent_id=parent.id)
    grandchild = app.sessions.create(str(tmp_path), parent_id=child.id)
    other = app.sessions.create(str(tmp_path))
    for session in (parent, child, grandchild, other):
        (app.scratch_dir(session.id) / "tool-results").mkdir(parents=True)
        (app.scratch_dir(session.id) / "tool-results" / "x.txt").write_text("big")

    app.delete_session(parent.id)

    assert [s.id for s in app.sessions.list(None)] == [other.id]
    assert not any(app.scratch_dir(s.id).exists() for s in (parent, child, grandchild))
    assert app.scratch_dir(other.id).exists()


# -- the embedded local model -----------------------------------------------------------------


def local_project(root: Path, config: str = "") -> tuple[Settings, dict[str, str]]:
    project = root / "project"
    project.mkdir(exist_ok=True)
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True), env


def test_without_a_model_or_a_key_the_embedded_model_is_chosen_and_announced_once(
    tmp_path: Path, opened: Callable[[Settings], App], notices: list[str]
) -> None:
    settings, env = local_project(tmp_path, "[limits]\nmax_iterations = 5\n")
    env |= {"OLLAMA_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": " "}  # no key among them
    app = opened(settings)

    assert app.models.config("large", env) == ModelConfig(model=BUNDLED_LOCAL_MODEL)
    assert app.models.config("small", env) == ModelConfig(model=BUNDLED_LOCAL_MODEL)

    assert len(notices) == 1
    assert BUNDLED_LOCAL_MODEL in notices[0] and "NESTOR_MODEL" in notices[0] and "\n" not in notices[0]


def test_with_a_key_but_no_model_the_user_must_choose(
    tmp_path: Path, opened: Callable[[Settings], App], notices: list[str]
) -> None:
    settings, env = local_project(tmp_path)
    app = opened(settings)

    with pytest.raises(ConfigError) as caught:
        app.models.config("large", env | {"ANTHROPIC_API_KEY": "sk-ant-test"})

    assert caught.value.message == "no model configured"
    assert notices == []


def test_a_configured_model_is_used_without_a_notice(
    tmp_path: Path, opened: Callable[[Settings], App], notices: list[str]
) -> None:
    settings, env = local_project(tmp_path, '[models]\nlarge = "local:model.gguf"\n')
    app = opened(settings)

    assert app.models.config("large", env).model == "local:model.gguf"
    assert app.models.config("small", env).model == "local:model.gguf"
    assert notices == []


def start_on_local_gguf(
    tmp_path: Path, opened: Callable[[Settings], App], tensors: Tensors
) -> tuple[App, Path, dict[str, str]]:
    path = write_chat_gguf(tmp_path / "models" / "coder.gguf", tensors)
    settings, env = local_project(tmp_path, f'[models]\nlarge = "local:{path}"\n')
    return opened(settings), path, env


async def test_a_small_local_model_gets_the_compact_prompt_and_tools(
    tmp_path: Path, opened: Callable[[Settings], App], notices: list[str]
) -> None:
    app, path, env = start_on_local_gguf(tmp_path, opened, COMPACT_TENSORS)

    agent = await app.start_main_agent(title="look around", env=env)

    setup = agent.setup
    assert setup.brief_tools is True
    assert [tool.name for tool in setup.tools] == ["view", "ls", "glob", "grep", "edit", "bash", "task"]
    assert setup.system_prompt.startswith(builtin_agent_prompt("coder-compact").strip())
    assert (setup.model_name, setup.priced) == (f"local:{path}", False)
    assert setup.context is not None and setup.context.context_window == DEFAULT_LOCAL_CONTEXT_WINDOW
    assert app.sessions.get(agent.session_id).model == f"local:{path}"
    # No titles: the small role falls back to the same local model, and a title costs seconds on a CPU.
    assert app.titles is None
    assert notices == []


async def test_a_local_model_is_built_once_per_process(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    app, _, env = start_on_local_gguf(tmp_path, opened, COMPACT_TENSORS)

    first = await app.start_main_agent(env=env)
    second = await app.start_main_agent(env=env)

    built = app.models.build(app.models.config("large", env), env)
    assert app.models.build(app.models.config("small", env), env) is built
    assert first.setup.model is second.setup.model is built.model
    assert isinstance(first.setup.compactor, Compaction)
    summarizer = first.setup.compactor.summarizer
    assert summarizer is not None and summarizer.model is built.model


async def test_a_large_local_model_gets_the_full_prompt_and_tools(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    app, _, env = start_on_local_gguf(tmp_path, opened, LARGE_TENSORS)

    agent = await app.start_main_agent(env=env)

    setup = agent.setup
    assert setup.brief_tools is False
    assert [tool.name for tool in setup.tools] == [
        *(tool.name for tool in coder_tools()),
        "todo_write",
        "task",
        "task_status",
        "task_output",
        "task_cancel",
        "agentic_fetch",
    ]
    assert "write" in [tool.name for tool in setup.tools]
    assert setup.system_prompt.startswith(builtin_agent_prompt("coder").strip())
    assert app.titles is None  # still in process on a CPU


def test_the_notice_names_every_ignored_setting_and_untrusted_agent_model(tmp_path: Path) -> None:
    from nestor.agents.spec import AgentSpec
    from nestor.app import ignored_settings_notices
    from nestor.config.settings import IgnoredSetting

    settings = Settings(
        project_root=tmp_path,
        data_dir=tmp_path,
        project_trusted=False,
        ignored=(
            IgnoredSetting("permissions.allow", "untrusted"),
            IgnoredSetting("providers.openai", "user provider"),
        ),
    )
    agent = AgentSpec(name="exfil", description="d", prompt="p", model="evil:gpt", source="project")
    untrusted, redefined = ignored_settings_notices(settings, [agent])
    assert (
        "not trusted" in untrusted and "permissions.allow" in untrusted and "agent exfil's model" in untrusted
    )
    assert "providers.openai" in redefined and "\n" not in untrusted + redefined
    assert ignored_settings_notices(Settings(project_root=tmp_path, data_dir=tmp_path), []) == []


def test_the_notice_names_ten_untrusted_agents_and_counts_the_others(tmp_path: Path) -> None:
    from nestor.agents.spec import AgentSpec
    from nestor.app import ignored_settings_notices

    settings = Settings(project_root=tmp_path, data_dir=tmp_path, project_trusted=False)
    agents = [
        AgentSpec(name=f"a{index:03}", description="d", prompt="p", model="evil:gpt", source="project")
        for index in range(300)
    ]
    [line] = ignored_settings_notices(settings, agents, agents[:5])
    assert "agent a009's model" in line and "a010" not in line
    assert "295 more agents' models or MCP servers" in line and len(line) < 600


async def test_the_main_session_is_held_until_another_replaces_it_or_the_app_closes(
    tmp_path: Path, opened: Callable[[Settings], App]
) -> None:
    import subprocess

    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from nestor.core.errors import SessionInUseError
    from nestor.store import SessionStore, open_database
    from nestor.store.lease import ProcessIdentity

    app = opened(write_project(tmp_path, "http://127.0.0.1:9/v1", small=None))
    first = await app.start_main_agent(env={})
    other = subprocess.Popen(["sleep", "60"])  # noqa: ASYNC220 - another process wanting the sessions
    try:
        elsewhere = SessionStore(app.database, holder=ProcessIdentity.of(other.pid))
        with pytest.raises(SessionInUseError):
            elsewhere.acquire(first.session_id)
        used = ModelRequest(parts=[UserPromptPart("hi")])  # a session left unused is not kept
        app.messages.append(first.session_id, used)
        second = await app.start_main_agent(env={})  # the REPL's /clear
        app.messages.append(second.session_id, used)
        elsewhere.acquire(first.session_id)  # the session left behind is free again
        with pytest.raises(SessionInUseError):
            elsewhere.acquire(second.session_id)
        app.close()
        with open_database(app.settings.database_path) as database:
            SessionStore(database, holder=ProcessIdentity.of(other.pid)).acquire(second.session_id)
    finally:
        other.kill()
        other.wait()
