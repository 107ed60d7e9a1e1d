"""Build a pydantic-ai model from a ``"provider:model"`` config.

Each provider's pydantic-ai module (and with it the provider's SDK, ~1 s to import) is imported
inside the function that builds that provider's model, so only the provider in use is paid for.

Keys and base URLs are read from the ``env`` mapping given to :func:`build_model` and passed to
the SDKs explicitly, so an injected environment is the whole truth. Building makes no request.

Anthropic models (the built-in ``anthropic`` provider and ``[providers.NAME]`` tables of
``type = "anthropic"``) use prompt caching: every request puts ``cache_control`` breakpoints on the
system prompt, the tool definitions and the last message, so each turn reads the previous turn's
prefix from the cache. These are explicit breakpoints rather than Anthropic's top-level automatic
``cache_control``, which Anthropic-compatible gateways and proxies may not support.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias

from nestor.config.sections import ModelConfig, NamedProviderConfig
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError, ProviderError
from nestor.providers.catalogue import (
    BUILTIN_PROVIDERS,
    api_key,
    base_url,
    credential_status,
    missing_credentials_error,
    parse_model_string,
    unknown_provider_error,
)

if TYPE_CHECKING:
    from httpx2 import AsyncClient, Request
    from pydantic_ai.models import Model
    from pydantic_ai.models.anthropic import AnthropicModelSettings
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings

DEFAULT_CONTEXT_WINDOW = 128_000
# A local or self-hosted server's window is whatever it was started with; assume a modest one, so
# compaction comes early rather than a request failing (a configured context_window wins).
LOCAL_DEFAULT_CONTEXT_WINDOW = 32_768
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
GOOGLE_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
_UNPRICED_PROVIDERS = frozenset({"ollama"})
_MIN_THINKING_BUDGET = 1024  # Anthropic's smallest budget_tokens
_ANSWER_ROOM = 4096  # what a lowered thinking budget leaves for the answer, at most half of max_tokens
# The OpenAI and Anthropic SDKs insist on some key; a keyless local server ignores this one.
_PLACEHOLDER_KEY = "api-key-not-set"

# Prefixes of model names (vendor prefix such as "anthropic/" removed), first match wins.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-oss", 131_072),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gemini-", 1_048_576),
    ("qwen3-coder", 262_144),
)


@dataclass(frozen=True, slots=True)
class BuiltModel:
    """A model ready for requests, with the settings to send with each one.

    Attributes:
        model: The pydantic-ai model (its defaults already include ``settings``).
        settings: Settings for every request; ``max_retries`` is 0 because nestor's loop retries.
            Anthropic models add prompt caching (``anthropic_cache_instructions``,
            ``anthropic_cache_tool_definitions`` and ``anthropic_cache_messages``, all ``True``).
        name: ``"provider:model"`` for display and storage.
        context_window: Tokens the model can attend to (see :func:`resolve_context_window`).
        priced: Whether public price tables apply. Not for named providers and local servers:
            a vLLM or proxy serving a model under a familiar name does not charge that vendor's
            prices, and a guessed cost is worse than none.
        small_profile: A small model (a local one of a few billion parameters): agents on it get
            the small-model profile (``coder-compact``'s prompt and tools, brief tool definitions,
            the small-model harness).
        in_process: The model runs in this process, on the CPU (``local:``): every request costs
            time the user waits for, so optional requests (titles) are skipped.

    """

    model: Model
    settings: ModelSettings
    name: str
    context_window: int
    priced: bool = True
    small_profile: bool = False
    in_process: bool = False


def build_model(
    model_config: ModelConfig,
    settings: Settings,
    *,
    env: Mapping[str, str] = os.environ,
    http_client: AsyncClient | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> BuiltModel:
    """Build the pydantic-ai model for ``model_config.model``.

    Args:
        model_config: The role's model and its request settings.
        settings: The settings, for named ``[providers.NAME]`` tables.
        env: Where API keys and base URLs are read from.
        http_client: An HTTP client for the SDK to use instead of its own (tests, transports).
            Configured ``headers`` of a named provider are added to every request it sends.
        on_progress: Receives one-line messages about long first-use work (preparing the
            embedded local model).

    Raises:
        ConfigError: The model string is not ``provider:model``.
        UnknownProviderError: The provider is neither built in nor configured.
        MissingCredentialsError: The provider's API key is not set in ``env``.
        ProviderError: The SDK refused the configuration.

    """
    provider, model_name = parse_model_string(model_config.model)
    named = settings.providers.get(provider)
    if named is None and provider not in BUILTIN_PROVIDERS:
        raise unknown_provider_error(provider, settings)
    status = credential_status(provider, settings, env)
    if not status.has_credentials:
        raise missing_credentials_error(status)
    key = api_key(provider, settings, env)
    model_settings = model_settings_for(model_config)
    if named is None and provider == "local":
        return _with_profile(
            _build_local(model_name, model_config, settings, model_settings, on_progress), model_config
        )
    if (named.type if named is not None else provider) == "anthropic":
        model_settings = _with_thinking_budget(_with_prompt_caching(model_settings), model_config.model)

    from pydantic_ai.exceptions import UserError

    # The model keeps its own copy as defaults, so a caller changing BuiltModel.settings changes only its own.
    defaults = model_settings.copy()
    try:
        if named is not None:
            model = _build_named(provider, named, model_name, key, http_client, defaults)
        else:
            model = _BUILDERS[provider](model_name, key, env, http_client, defaults)
    except UserError as exc:
        raise ProviderError(
            f"cannot build model {model_config.model!r}: {exc}", hint="check the provider's settings"
        ) from None
    priced = named is None and provider not in _UNPRICED_PROVIDERS
    built = BuiltModel(
        model=model,
        settings=model_settings,
        name=f"{provider}:{model_name}",
        context_window=resolve_context_window(
            model_config.context_window, model, model_name, local=not priced
        ),
        priced=priced,
    )
    return _with_profile(built, model_config)


def _with_profile(built: BuiltModel, model_config: ModelConfig) -> BuiltModel:
    """Apply a configured ``profile``: ``small`` and ``full`` override what the model's size chose."""
    if model_config.profile == "auto":
        return built
    return replace(built, small_profile=model_config.profile == "small")


def _build_local(
    model_name: str,
    model_config: ModelConfig,
    settings: Settings,
    model_settings: ModelSettings,
    on_progress: Callable[[str], None] | None,
) -> BuiltModel:
    """A GGUF model in process (``local:``); its window is what llama.cpp is given."""
    try:
        from nestor.providers.local.loader import build_local_model
    except ModuleNotFoundError as missing:  # jinja2 (the chat template) or another package of [local]
        from nestor.providers.local.engine import missing_dependency

        raise missing_dependency(missing) from None

    local = build_local_model(
        model_name,
        data_dir=settings.data_dir,
        project_root=settings.project_root,
        context_window=model_config.context_window,
        threads=settings.local.threads,
        settings=model_settings,
        on_progress=on_progress,
    )
    return BuiltModel(
        model=local.model,
        settings=model_settings,
        name=f"local:{model_name}",
        context_window=local.context_window,
        priced=False,
        small_profile=local.small_profile,
        in_process=True,
    )


def model_settings_for(model_config: ModelConfig) -> ModelSettings:
    """Map a role's config onto pydantic-ai's unified request settings.

    ``max_retries`` is always 0: nestor's own loop retries with backoff honouring Retry-After,
    and SDK retries underneath would multiply the attempts and hide the waits.
    """
    model_settings: ModelSettings = {"max_retries": 0}
    if model_config.max_tokens is not None:
        model_settings["max_tokens"] = model_config.max_tokens
    if model_config.temperature is not None:
        model_settings["temperature"] = model_config.temperature
    if model_config.thinking is not None:
        model_settings["thinking"] = model_config.thinking
    return model_settings


def _with_prompt_caching(model_settings: ModelSettings) -> ModelSettings:
    """Return ``model_settings`` with cache breakpoints on the system prompt, tools and last message.

    Three of Anthropic's four breakpoints (pydantic-ai drops any beyond four). The system prompt
    and tools are the same on every request of a session, and the breakpoint on the last message
    moves forward each turn, so a turn reads everything up to the previous turn's end from the
    cache and writes only what is new.
    """
    cached: AnthropicModelSettings = {
        **model_settings,
        "anthropic_cache_instructions": True,
        "anthropic_cache_tool_definitions": True,
        "anthropic_cache_messages": True,
    }
    return cached


def _with_thinking_budget(model_settings: ModelSettings, model: str) -> ModelSettings:
    """Return ``model_settings`` with Anthropic's thinking budget below the configured ``max_tokens``.

    Models that think within ``budget_tokens`` (those before adaptive thinking) need
    1024 <= budget_tokens < max_tokens, and pydantic-ai maps ``thinking`` to a fixed budget (16384
    for "high") whatever ``max_tokens`` says. A budget that does not fit is lowered to leave the
    answer room (up to 4096 tokens, at most half of ``max_tokens``), and never below 1024.

    Raises:
        ConfigError: ``max_tokens`` is 1024 or less, which leaves no room for any thinking.

    """
    thinking = model_settings.get("thinking")
    max_tokens = model_settings.get("max_tokens")
    if not thinking or max_tokens is None:
        return model_settings
    from pydantic_ai.profiles.anthropic import ANTHROPIC_THINKING_BUDGET_MAP, anthropic_model_profile

    profile = anthropic_model_profile(model.partition(":")[2]) or {}
    if profile.get("anthropic_supports_adaptive_thinking", False):
        return model_settings
    budget = ANTHROPIC_THINKING_BUDGET_MAP[thinking]
    if budget < max_tokens:
        return model_settings
    if max_tokens <= _MIN_THINKING_BUDGET:
        raise ConfigError(
            f"{model}: thinking needs max_tokens above {_MIN_THINKING_BUDGET} (Anthropic's smallest "
            f"thinking budget), but max_tokens = {max_tokens}",
            hint="raise max_tokens, or set thinking = false for this model",
        )
    budget = max(_MIN_THINKING_BUDGET, max_tokens - min(_ANSWER_ROOM, max_tokens // 2))
    return {**model_settings, "anthropic_thinking": {"type": "enabled", "budget_tokens": budget}}  # pyright: ignore[reportReturnType]


def resolve_context_window(configured: int | None, model: Model, model_name: str, *, local: bool) -> int:
    """Return a model's context window in tokens.

    The configured value, else what pydantic-ai's model profile knows (from genai-prices' model
    data), else for a local or self-hosted server (ollama, a ``[providers.NAME]``) a modest 32768,
    else the model family's known window, else 128000.
    """
    if configured:
        return configured
    try:
        known = model.context_window
    except Exception:  # profile data is a convenience; a bug in it must not stop a run
        known = None
    if known:
        return known
    return LOCAL_DEFAULT_CONTEXT_WINDOW if local else context_window_for(model_name)


def context_window_for(model_name: str) -> int:
    """Return the known context window of a model family, else a conservative 128000."""
    bare = model_name.rsplit("/", 1)[-1].lstrip("~").lower()
    return next(
        (size for prefix, size in _CONTEXT_WINDOWS if bare.startswith(prefix)), DEFAULT_CONTEXT_WINDOW
    )


_Builder: TypeAlias = (
    "Callable[[str, str | None, Mapping[str, str], AsyncClient | None, ModelSettings], Model]"
)


def _anthropic(
    model_name: str, key: str | None, env: Mapping[str, str], client: AsyncClient | None, ms: ModelSettings
) -> Model:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    url = env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_BASE_URL
    provider = AnthropicProvider(api_key=key, base_url=url, http_client=client)
    return AnthropicModel(model_name, provider=provider, settings=ms)


def _openai_provider(key: str | None, env: Mapping[str, str], client: AsyncClient | None) -> OpenAIProvider:
    from pydantic_ai.providers.openai import OpenAIProvider

    # Always explicit: left as None the SDK would read os.environ behind the injected env.
    url = env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
    return OpenAIProvider(base_url=url, api_key=key or _PLACEHOLDER_KEY, http_client=client)


def _openai_responses(
    model_name: str, key: str | None, env: Mapping[str, str], client: AsyncClient | None, ms: ModelSettings
) -> Model:
    from pydantic_ai.models.openai import OpenAIResponsesModel

    return OpenAIResponsesModel(model_name, provider=_openai_provider(key, env, client), settings=ms)


def _openai_chat(
    model_name: str, key: str | None, env: Mapping[str, str], client: AsyncClient | None, ms: ModelSettings
) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from nestor.providers.openai_client import openai_client

    url = env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
    sdk = openai_client(base_url=url, api_key=key or _PLACEHOLDER_KEY, http_client=client)
    return OpenAIChatModel(model_name, provider=OpenAIProvider(openai_client=sdk), settings=ms)


def _google(
    model_name: str, key: str | None, env: Mapping[str, str], client: AsyncClient | None, ms: ModelSettings
) -> Model:
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    # Always explicit, as OpenAI's: left as None, google-genai reads os.environ behind the injected env.
    url = env.get("GOOGLE_GEMINI_BASE_URL") or GOOGLE_DEFAULT_BASE_URL
    provider = GoogleProvider(api_key=key, http_client=client, base_url=url)
    return GoogleModel(model_name, provider=provider, settings=ms)


def _openrouter(
    model_name: str, key: str | None, env: Mapping[str, str], client: AsyncClient | None, ms: ModelSettings
) -> Model:
    from pydantic_ai.models.openrouter import OpenRouterModel
    from pydantic_ai.providers.openrouter import OpenRouterProvider

    title = env.get("OPENROUTER_APP_TITLE") or "nestor"
    provider = OpenRouterProvider(
        api_key=key, app_url=env.get("OPENROUTER_APP_URL"), app_title=title, http_client=client
    )
    return OpenRouterModel(model_name, provider=provider, settings=ms)


def _ollama(
    model_name: str, key: str | None, env: Mapping[str, str], client: AsyncClient | None, ms: ModelSettings
) -> Model:
    from pydantic_ai.models.ollama import OllamaModel
    from pydantic_ai.providers.ollama import OllamaProvider

    from nestor.providers.openai_client import openai_client

    url = base_url(BUILTIN_PROVIDERS["ollama"], env)
    assert url is not None  # Ollama's has a default
    sdk = openai_client(base_url=url, api_key=key or _PLACEHOLDER_KEY, http_client=client)
    return OllamaModel(model_name, provider=OllamaProvider(openai_client=sdk), settings=ms)


_BUILDERS: Mapping[str, _Builder] = {
    "anthropic": _anthropic,
    "openai": _openai_responses,
    "openai-chat": _openai_chat,
    "google": _google,
    "openrouter": _openrouter,
    "ollama": _ollama,
}


def _build_named(
    name: str,
    config: NamedProviderConfig,
    model_name: str,
    key: str | None,
    client: AsyncClient | None,
    ms: ModelSettings,
) -> Model:
    """Build a model on a ``[providers.NAME]`` server; ``name`` becomes the responses' provider name."""
    if config.headers:
        client = _with_headers(client, config.headers)
    if config.type == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        url = config.base_url or ANTHROPIC_DEFAULT_BASE_URL
        provider = AnthropicProvider(api_key=key or _PLACEHOLDER_KEY, base_url=url, http_client=client)
        return AnthropicModel(model_name, provider=provider, settings=ms)

    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    assert config.base_url is not None  # the config validator requires it for OpenAI types
    if config.type == "openai-responses":
        compatible = OpenAICompatibleProvider(name, base_url=config.base_url, api_key=key, http_client=client)
        return OpenAIResponsesModel(model_name, provider=compatible, settings=ms)
    from nestor.providers.openai_client import openai_client

    sdk = openai_client(base_url=config.base_url, api_key=key or _PLACEHOLDER_KEY, http_client=client)
    return OpenAIChatModel(
        model_name, provider=OpenAICompatibleProvider(name, openai_client=sdk), settings=ms
    )


def _with_headers(client: AsyncClient | None, headers: Mapping[str, str]) -> AsyncClient:
    """Return ``client`` (or a new default one) setting ``headers`` on every request.

    A request hook rather than client headers, because the SDKs set their own ``Authorization``
    per request and a client header would lose to it; a configured header must win.
    """
    from pydantic_ai.models import create_async_httpx2_client

    client = client or create_async_httpx2_client()
    fixed = dict(headers)

    async def set_headers(request: Request) -> None:
        request.headers.update(fixed)

    hooks = client.event_hooks
    client.event_hooks = {**hooks, "request": [*hooks.get("request", []), set_headers]}
    return client
