from pathlib import Path

import pytest

from nestor.config.sections import NamedProviderConfig
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError, MissingCredentialsError, UnknownProviderError
from nestor.providers.catalogue import (
    BUILTIN_PROVIDERS,
    CredentialStatus,
    api_key,
    credential_status,
    keyed_providers,
    known_providers,
    missing_credentials_error,
    parse_model_string,
    unknown_provider_error,
)


def make_settings(tmp_path: Path, **providers: NamedProviderConfig) -> Settings:
    return Settings(project_root=tmp_path, data_dir=tmp_path / "data", providers=providers)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path,
        myvllm=NamedProviderConfig(base_url="http://127.0.0.1:8000/v1"),
        secured=NamedProviderConfig(base_url="http://127.0.0.1:8001/v1", api_key_env="SECURED_KEY"),
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("anthropic:claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("ollama:qwen3:8b", ("ollama", "qwen3:8b")),
        ("openrouter:anthropic/claude-sonnet-4.5", ("openrouter", "anthropic/claude-sonnet-4.5")),
        ("  openai:gpt-5 ", ("openai", "gpt-5")),
    ],
)
def test_parse_model_string(value: str, expected: tuple[str, str]) -> None:
    assert parse_model_string(value) == expected


@pytest.mark.parametrize("value", ["gpt-5", "openai:", ":gpt-5", ""])
def test_parse_model_string_rejects_incomplete_strings(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_string(value)
    assert "expected 'provider:model'" in caught.value.message
    assert "anthropic:claude-sonnet-4-5" in (caught.value.hint or "")


def test_known_providers_lists_builtins_then_configured(settings: Settings) -> None:
    assert known_providers(settings) == (
        "anthropic",
        "openai",
        "openai-chat",
        "google",
        "openrouter",
        "ollama",
        "local",
        "myvllm",
        "secured",
    )


def test_named_provider_overriding_a_builtin_is_listed_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ollama=NamedProviderConfig(base_url="http://127.0.0.1:9/v1"))
    assert known_providers(settings).count("ollama") == 1
    assert credential_status("ollama", settings, {}).detail == "no key needed for http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("openai-chat", "OPENAI_API_KEY"),
        ("google", "GOOGLE_API_KEY"),
        ("google", "GEMINI_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ],
)
def test_key_providers_need_their_variable(settings: Settings, provider: str, variable: str) -> None:
    missing = credential_status(provider, settings, {})
    assert not missing.has_credentials
    assert variable in missing.env_vars
    assert variable in missing.detail
    present = credential_status(provider, settings, {variable: "sk-test"})
    assert present == CredentialStatus(provider, True, missing.env_vars, f"{variable} is set")
    assert api_key(provider, settings, {variable: "sk-test"}) == "sk-test"


def test_blank_key_counts_as_missing(settings: Settings) -> None:
    assert not credential_status("anthropic", settings, {"ANTHROPIC_API_KEY": "  "}).has_credentials
    assert api_key("anthropic", settings, {"ANTHROPIC_API_KEY": ""}) is None


def test_google_prefers_google_api_key(settings: Settings) -> None:
    env = {"GEMINI_API_KEY": "gemini", "GOOGLE_API_KEY": "google"}
    assert api_key("google", settings, env) == "google"
    assert credential_status("google", settings, env).detail == "GOOGLE_API_KEY is set"


def test_openai_base_url_makes_the_key_optional(settings: Settings) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    for provider in ("openai", "openai-chat"):
        status = credential_status(provider, settings, env)
        assert status.has_credentials
        assert "OPENAI_BASE_URL is set (http://127.0.0.1:8000/v1)" in status.detail
    assert not credential_status("anthropic", settings, {"ANTHROPIC_BASE_URL": "http://x"}).has_credentials


def test_ollama_needs_no_key(settings: Settings) -> None:
    status = credential_status("ollama", settings, {})
    assert status.has_credentials
    assert "http://localhost:11434/v1" in status.detail
    redirected = credential_status("ollama", settings, {"OLLAMA_BASE_URL": "http://127.0.0.1:1/v1"})
    assert "http://127.0.0.1:1/v1" in redirected.detail


def test_local_needs_no_key_and_runs_in_process(settings: Settings) -> None:
    status = credential_status("local", settings, {})
    assert status == CredentialStatus("local", True, (), "no key needed (runs in process)")
    assert api_key("local", settings, {"OPENAI_API_KEY": "not-for-you"}) is None


def test_keyed_providers_lists_the_builtins_that_need_a_key_and_have_one() -> None:
    assert keyed_providers({}) == ()
    # Ollama's optional key and base URLs do not count: no key was needed for them.
    keyless = {
        "OLLAMA_API_KEY": "o",
        "OLLAMA_BASE_URL": "http://127.0.0.1:1/v1",
        "OPENAI_BASE_URL": "http://x",
    }
    assert keyed_providers(keyless) == ()
    assert keyed_providers({"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": " "}) == ("anthropic",)
    everything = {
        "ANTHROPIC_API_KEY": "a",
        "OPENAI_API_KEY": "o",
        "GEMINI_API_KEY": "g",
        "OPENROUTER_API_KEY": "r",
        "OLLAMA_API_KEY": "l",
    }
    assert keyed_providers(everything) == ("anthropic", "openai", "openai-chat", "google", "openrouter")


def test_named_provider_without_api_key_env_needs_no_key(settings: Settings) -> None:
    status = credential_status("myvllm", settings, {})
    assert status == CredentialStatus("myvllm", True, (), "no key needed for http://127.0.0.1:8000/v1")
    assert api_key("myvllm", settings, {"OPENAI_API_KEY": "not-for-you"}) is None


def test_named_provider_with_api_key_env(settings: Settings) -> None:
    assert credential_status("secured", settings, {}) == CredentialStatus(
        "secured", False, ("SECURED_KEY",), "set SECURED_KEY"
    )
    assert credential_status("secured", settings, {"SECURED_KEY": "k"}).has_credentials
    assert api_key("secured", settings, {"SECURED_KEY": "k"}) == "k"


def test_unknown_provider_lists_known_and_configured(settings: Settings) -> None:
    with pytest.raises(UnknownProviderError) as caught:
        credential_status("foo", settings, {})
    message = caught.value.message
    assert "unknown provider 'foo'" in message
    assert all(name in message for name in BUILTIN_PROVIDERS)
    assert "configured: myvllm, secured" in message
    assert "[providers.foo]" in (caught.value.hint or "")


def test_unknown_provider_without_configured_ones(tmp_path: Path) -> None:
    error = unknown_provider_error("foo", make_settings(tmp_path))
    assert "none configured" in error.message
    with pytest.raises(UnknownProviderError):
        api_key("foo", make_settings(tmp_path), {})


def test_missing_credentials_error_names_the_variable(settings: Settings) -> None:
    error = missing_credentials_error(credential_status("anthropic", settings, {}))
    assert isinstance(error, MissingCredentialsError)
    assert error.message == "no API key for provider 'anthropic': ANTHROPIC_API_KEY is not set"
    assert "export ANTHROPIC_API_KEY=" in (error.hint or "")
    assert "OPENAI_BASE_URL" not in (error.hint or "")


def test_missing_openai_key_suggests_base_url(settings: Settings) -> None:
    error = missing_credentials_error(credential_status("openai", settings, {}))
    assert "OPENAI_API_KEY" in error.message
    assert "OPENAI_BASE_URL" in (error.hint or "")


def test_missing_google_key_names_both_variables(settings: Settings) -> None:
    error = missing_credentials_error(credential_status("google", settings, {}))
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in error.message
