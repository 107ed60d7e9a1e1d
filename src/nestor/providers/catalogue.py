"""The providers nestor knows, the environment variables they read, and whether a key is set.

Built-in providers (the ``provider`` part of ``"provider:model"``) and what they need:

- ``anthropic``: Anthropic Messages API; ``ANTHROPIC_API_KEY`` (``ANTHROPIC_BASE_URL`` honoured).
- ``openai``: OpenAI Responses API; ``OPENAI_API_KEY``, optional when ``OPENAI_BASE_URL`` points
  at a compatible server (as the openai SDK behaves).
- ``openai-chat``: OpenAI chat completions API; the same variables as ``openai``.
- ``google``: Gemini API; ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``.
- ``openrouter``: OpenRouter; ``OPENROUTER_API_KEY``.
- ``ollama``: Ollama's OpenAI-compatible API; no key, ``OLLAMA_BASE_URL`` (default
  ``http://localhost:11434/v1``).
- ``local``: a GGUF model run in process by llama.cpp (``pip install 'nestor[local]'``); no key.
  ``local:PATH.gguf`` is any GGUF file, ``local`` alone the embedded Qwen2.5-Coder-1.5B.

A ``[providers.NAME]`` table in the config adds a named provider (and overrides a built-in one
of the same name). This module imports no provider SDK: ``nestor models`` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from nestor.core.errors import ConfigError, MissingCredentialsError, UnknownProviderError

if TYPE_CHECKING:
    from nestor.config.settings import Settings

DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434/v1"
_KEY_OPTIONAL_WITH_BASE_URL = frozenset({"openai", "openai-chat"})


@dataclass(frozen=True, slots=True)
class BuiltinProvider:
    """A provider nestor knows without configuration.

    Attributes:
        name: The ``provider`` part of ``"provider:model"``.
        description: One line for ``nestor models``.
        key_env_vars: Variables holding the API key, first found wins.
        key_required: Whether a request cannot work without a key.
        base_url_env: The variable that points the provider at another server, if any.

    """

    name: str
    description: str
    key_env_vars: tuple[str, ...]
    key_required: bool = True
    base_url_env: str | None = None


_OPENAI_KEY = ("OPENAI_API_KEY",)
BUILTIN_PROVIDERS: Mapping[str, BuiltinProvider] = MappingProxyType(
    {
        provider.name: provider
        for provider in (
            BuiltinProvider(
                "anthropic", "Anthropic Messages API", ("ANTHROPIC_API_KEY",), True, "ANTHROPIC_BASE_URL"
            ),
            BuiltinProvider("openai", "OpenAI Responses API", _OPENAI_KEY, True, "OPENAI_BASE_URL"),
            BuiltinProvider(
                "openai-chat", "OpenAI chat completions API", _OPENAI_KEY, True, "OPENAI_BASE_URL"
            ),
            BuiltinProvider("google", "Google Gemini API", ("GOOGLE_API_KEY", "GEMINI_API_KEY")),
            BuiltinProvider("openrouter", "OpenRouter", ("OPENROUTER_API_KEY",)),
            BuiltinProvider(
                "ollama", "Ollama, local (OpenAI-compatible)", ("OLLAMA_API_KEY",), False, "OLLAMA_BASE_URL"
            ),
            BuiltinProvider(
                "local", "embedded llama.cpp, a GGUF model in process (nestor[local])", (), False
            ),
        )
    }
)
"""Every built-in provider by name, in the order ``nestor models`` lists them."""


@dataclass(frozen=True, slots=True)
class CredentialStatus:
    """Whether a provider can be used with the current environment.

    Attributes:
        provider: The provider name.
        has_credentials: ``True`` when a key is set, or the provider needs none.
        env_vars: The variables the key is read from (empty when it needs none).
        detail: One human line: which variable is set, or what to set.

    """

    provider: str
    has_credentials: bool
    env_vars: tuple[str, ...]
    detail: str


def parse_model_string(value: str) -> tuple[str, str]:
    """Split ``"provider:model"`` at the first colon (model names may contain colons).

    Raises:
        ConfigError: ``value`` has no colon, or an empty provider or model part.

    """
    provider, colon, model_name = value.strip().partition(":")
    if not (colon and provider and model_name):
        raise ConfigError(
            f"invalid model {value!r}: expected 'provider:model'",
            hint="write it like anthropic:claude-sonnet-4-5, openai:gpt-5 or ollama:qwen3:8b",
        )
    return provider, model_name


def known_providers(settings: Settings) -> tuple[str, ...]:
    """Return the built-in provider names followed by the configured ones, without duplicates."""
    configured = tuple(sorted(name for name in settings.providers if name not in BUILTIN_PROVIDERS))
    return (*BUILTIN_PROVIDERS, *configured)


def credential_status(
    provider: str, settings: Settings, env: Mapping[str, str] = os.environ
) -> CredentialStatus:
    """Report whether ``provider`` has the credentials it needs in ``env``.

    Raises:
        UnknownProviderError: ``provider`` is neither built in nor configured.

    """
    named = settings.providers.get(provider)
    if named is not None:
        if named.api_key_env is None:
            return CredentialStatus(provider, True, (), f"no key needed for {named.base_url or named.type}")
        return _key_status(provider, (named.api_key_env,), env)
    builtin = BUILTIN_PROVIDERS.get(provider)
    if builtin is None:
        raise unknown_provider_error(provider, settings)
    status = _key_status(provider, builtin.key_env_vars, env)
    if status.has_credentials:
        return status
    if not builtin.key_required:
        url = base_url(builtin, env)
        detail = f"no key needed ({url})" if url else "no key needed (runs in process)"
        return CredentialStatus(provider, True, builtin.key_env_vars, detail)
    # Like the openai SDK: a redirected OpenAI client may talk to a compatible server without auth.
    if builtin.name in _KEY_OPTIONAL_WITH_BASE_URL and (url := base_url(builtin, env)):
        detail = f"{builtin.base_url_env} is set ({url}); no key needed"
        return CredentialStatus(provider, True, builtin.key_env_vars, detail)
    return status


def keyed_providers(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Return the built-in providers that need a key and have one set in ``env``."""
    return tuple(
        provider.name
        for provider in BUILTIN_PROVIDERS.values()
        if provider.key_required and _key_status(provider.name, provider.key_env_vars, env).has_credentials
    )


def api_key(provider: str, settings: Settings, env: Mapping[str, str] = os.environ) -> str | None:
    """Return the API key for ``provider`` from ``env``, or ``None`` when none is set."""
    named = settings.providers.get(provider)
    if named is not None:
        return _value(env, named.api_key_env) if named.api_key_env else None
    builtin = BUILTIN_PROVIDERS.get(provider)
    if builtin is None:
        raise unknown_provider_error(provider, settings)
    return next((key for name in builtin.key_env_vars if (key := _value(env, name))), None)


def base_url(provider: BuiltinProvider, env: Mapping[str, str] = os.environ) -> str | None:
    """Return the server a built-in provider talks to when ``env`` redirects it, else ``None``.

    Ollama always has one: ``OLLAMA_BASE_URL`` or ``http://localhost:11434/v1``.
    """
    url = _value(env, provider.base_url_env) if provider.base_url_env else None
    if url is None and provider.name == "ollama":
        return DEFAULT_OLLAMA_BASE_URL
    return url


def unknown_provider_error(provider: str, settings: Settings) -> UnknownProviderError:
    """Build the error for a provider name nobody knows, listing the ones that exist."""
    configured = sorted(settings.providers)
    listed = f"known: {', '.join(BUILTIN_PROVIDERS)}"
    listed += f"; configured: {', '.join(configured)}" if configured else "; none configured"
    return UnknownProviderError(
        f"unknown provider {provider!r} ({listed})",
        hint=f"use one of those, or add a [providers.{provider}] table with type and base_url to nestor.toml",
    )


def missing_credentials_error(status: CredentialStatus) -> MissingCredentialsError:
    """Build the error for a provider whose key is not set, naming the variable to set."""
    names = " or ".join(status.env_vars)
    hint = f"set {names} (e.g. export {status.env_vars[0]}=...)" if status.env_vars else "set its API key"
    if status.provider in _KEY_OPTIONAL_WITH_BASE_URL:
        hint += ", or set OPENAI_BASE_URL to use an OpenAI-compatible server that needs no key"
    return MissingCredentialsError(
        f"no API key for provider {status.provider!r}: {names} is not set", hint=hint
    )


def _key_status(provider: str, env_vars: tuple[str, ...], env: Mapping[str, str]) -> CredentialStatus:
    for name in env_vars:
        if _value(env, name):
            return CredentialStatus(provider, True, env_vars, f"{name} is set")
    return CredentialStatus(provider, False, env_vars, f"set {' or '.join(env_vars)}")


def _value(env: Mapping[str, str], name: str | None) -> str | None:
    """An environment value, treating unset and blank alike."""
    value = env.get(name, "").strip() if name else ""
    return value or None
