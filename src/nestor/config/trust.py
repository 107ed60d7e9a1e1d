"""What a project's ``nestor.toml`` may set: all of it once trusted, only narrowing keys before.

A project's ``nestor.toml`` comes with the repository, so it is a stranger's input until the user
trusts the folder (:mod:`nestor.store.trust`). Before that, only the keys that narrow what nestor
does apply (``permissions.ask`` and ``.deny``, ``[context]``, ``local.threads``,
``web.search_results``, a stricter ``[sandbox]``, ``[lsp.NAME] enabled = false``); every other
key is ignored and named in :attr:`~nestor.config.settings.Settings.ignored`. Even a trusted
project never redefines a built-in provider or one the user config defines: the user's key and
conversation go only where the user pointed them. Nor does it set ``[mcp]`` (which variables a
project's MCP servers may read: the user's decision alone), and its MCP servers are kept apart from
the user's (:mod:`nestor.config.mcp_project`). No project, trusted or not, starts a language
server in a folder that is not trusted (see ``nestor.tools.lsp.servers``).
"""

from __future__ import annotations

from typing import Any

from nestor.config.settings import IgnoredSetting

BUILTIN_KEY_VARIABLES = frozenset(
    {
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "OPENROUTER_API_KEY",
        "OLLAMA_API_KEY",
    }
)
"""The variables built-in providers read their keys from; a project's own provider may not send them."""
BUILTIN_PROVIDER_NAMES = frozenset(
    {"anthropic", "openai", "openai-chat", "google", "openrouter", "ollama", "local"}
)
"""Providers nestor knows without configuration (``nestor.providers.catalogue`` describes them)."""
_SANDBOX_STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}


def project_data(
    data: dict[str, Any], user_data: dict[str, Any], *, trusted: bool
) -> tuple[dict[str, Any], list[IgnoredSetting]]:
    """The part of a project's config that applies, and what was left out."""
    kept: dict[str, Any] = {}
    ignored: list[IgnoredSetting] = []
    user_providers: Any = user_data.get("providers")
    for section, value in data.items():
        if section == "mcp":
            ignored.append(IgnoredSetting(section, "user only"))
        elif section == "providers" and isinstance(value, dict):
            providers: dict[str, Any] = {}
            named: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            for name, table in named.items():
                if name in BUILTIN_PROVIDER_NAMES or (
                    isinstance(user_providers, dict) and name in user_providers
                ):
                    ignored.append(IgnoredSetting(f"providers.{name}", "user provider"))
                elif _sends_a_user_key(table, user_data):
                    ignored.append(IgnoredSetting(f"providers.{name}", "user key"))
                elif trusted:
                    providers[name] = table
                else:
                    ignored.append(IgnoredSetting(f"providers.{name}", "untrusted"))
            if providers:
                kept[section] = providers
        elif trusted:
            kept[section] = value
        elif isinstance(value, dict):
            table: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            narrowing = {key: item for key, item in table.items() if _narrows(section, key, item, user_data)}
            ignored.extend(
                IgnoredSetting(f"{section}.{key}", "untrusted") for key in table if key not in narrowing
            )
            if narrowing:
                kept[section] = narrowing
        else:
            ignored.append(IgnoredSetting(section, "untrusted"))
    return kept, ignored


def user_key_variables(user_data: dict[str, Any]) -> frozenset[str]:
    """The variables of the user's provider keys: the built-in ones and the user's ``api_key_env``s."""
    user_providers: Any = user_data.get("providers")
    user_variables: set[str] = set()
    if isinstance(user_providers, dict):
        for user_table in user_providers.values():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(user_table, dict) and isinstance(user_table.get("api_key_env"), str):  # pyright: ignore[reportUnknownMemberType]
                user_variables.add(user_table["api_key_env"].strip())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    return BUILTIN_KEY_VARIABLES | user_variables


def _sends_a_user_key(table: object, user_data: dict[str, Any]) -> bool:
    """Whether a project's provider table reads the key of a built-in or user-configured provider."""
    variable: Any = table.get("api_key_env") if isinstance(table, dict) else None
    return isinstance(variable, str) and variable.strip() in user_key_variables(user_data)


def _narrows(section: str, key: str, value: object, user_data: dict[str, Any]) -> bool:
    """Whether an untrusted project may set ``[section] key = value``: it can only make nestor stricter.

    Kept to a list of known-safe keys, so a key added later is untrusted until someone decides.
    """
    if section == "permissions":
        return key in ("ask", "deny")
    if section == "lsp":
        # A server command runs on the user's machine: only turning a server off narrows.
        return value == {"enabled": False}
    if section == "sandbox":
        user_sandbox: Any = user_data.get("sandbox")
        user_mode: Any = user_sandbox.get("mode") if isinstance(user_sandbox, dict) else None
        below = _SANDBOX_STRICTNESS.get(user_mode if isinstance(user_mode, str) else "", 1)
        if key == "mode":
            return isinstance(value, str) and _SANDBOX_STRICTNESS.get(value, -1) >= below
        return key in ("network", "writable_git") and value is False
    return (section, key) in {("web", "search_results"), ("local", "threads")} or section == "context"
