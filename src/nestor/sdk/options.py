"""The SDK's options: one dataclass, checked before anything starts, and what it makes of nestor's settings.

:class:`AgentOptions` mirrors the Claude Agent SDK's ``ClaudeAgentOptions`` (without the brand:
the options are an agent's, whichever model runs it). Each option lands on what nestor already
has: ``allowed_tools`` and ``disallowed_tools`` on permission rules (Claude Code's rule syntax,
``Bash(git *)``, is nestor's too), ``max_turns`` on ``[limits] max_iterations``,
``max_budget_usd`` on the tree's cost cap (``[agents] max_cost_usd``), ``mcp_servers`` on the
user's own ``[mcp_servers]``, ``agents`` on agent specs the registry takes before any file, and
``permission_mode`` on ``--yolo`` (``bypassPermissions``), the ``accept_edits`` answers
(``acceptEdits``) or a main agent without ``write``, ``edit`` and ``bash`` (``plan``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn, get_args

from pydantic import ValidationError

from nestor.agents.registry import builtin_spec
from nestor.agents.spec import AgentSpec
from nestor.agents.tool_names import describe_unknown_tool, map_tool_name, split_tool_entry
from nestor.app.records import TrustedFolders
from nestor.config.hooks import HOOK_EVENTS
from nestor.config.loading import load_settings
from nestor.config.paths import resolve_data_dir
from nestor.config.sections import McpServerConfig, ModelConfig, PermissionsConfig, check_mcp_server_names
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError, StoreError
from nestor.sdk.types import AgentDefinition, CanUseTool, PermissionMode

PLAN_MODE_DENIED = ("write", "edit", "bash")
"""What ``permission_mode="plan"`` takes from the main agent, and denies its sub-agents by rule."""

_PLAN_PROMPT = (
    "You are in plan mode: study the repository and answer with a plan. You cannot change files or "
    "run commands, and you do not try to."
)
_OPTIONS_HINT = "see AgentOptions in nestor.api (help(nestor.api.AgentOptions))"


@dataclass(slots=True)
class AgentOptions:
    """How a :func:`~nestor.sdk.client.query` or a :class:`~nestor.sdk.client.Client` runs.

    Attributes:
        cwd: The project nestor works in (the current directory when None).
        model: The main agent's model, ``provider:model`` (``anthropic:claude-sonnet-4-5``);
            None takes the configured large model.
        system_prompt: A string replaces the main agent's prompt; ``{"type": "preset", "preset":
            "nestor", "append": "..."}`` (``"claude_code"`` is read as ``"nestor"``) appends to it.
            The main agent is then nestor's ``coder``, on a small model too (not ``coder-compact``),
            as with bare ``disallowed_tools`` and ``plan``.
        allowed_tools: Allow rules: calls they cover run without asking (``Read``,
            ``Bash(git status:*)``, ``mcp__github__*``).
        disallowed_tools: Deny rules, which hold in every mode; a bare tool name also takes the
            tool from the main agent (and so from every sub-agent).
        permission_mode: ``default`` (what the rules leave open goes to ``can_use_tool``, else is
            refused), ``acceptEdits`` (edits inside the project run without asking),
            ``bypassPermissions`` (``--yolo``: deny and ask rules still hold) or ``plan`` (the
            main agent reads and plans: no ``write``, ``edit`` or ``bash``, none for sub-agents).
        can_use_tool: ``async (tool_name, input, context) -> PermissionResultAllow |
            PermissionResultDeny``, asked every question the rules leave open, for every agent
            of the tree (nestor's tool names: ``bash``, ``write``, ``edit``, ...).
        hooks: Hook callbacks by event, ``{"PreToolUse": [HookMatcher(...)]}`` (as Claude's SDK:
            ``nestor.api.HookMatcher``, each callback ``async (input, tool_use_id, context) -> dict``),
            for every agent of the tree, as ``App.open(settings, hooks=...)`` takes them.
        agents: Sub-agents by name, available to the main agent's ``task`` calls in this
            session; they take precedence over agent files of the same name.
        mcp_servers: MCP servers by name, as ``.mcp.json`` writes them (``{"command": ...,
            "args": [...]}`` or ``{"type": "http", "url": ...}``): yours, started without approval.
        max_turns: The most model requests of one run (``[limits] max_iterations``).
        max_budget_usd: Stop every agent of the tree once it has spent this much (priced models only).
        resume: A session id to go on with (a :class:`~nestor.sdk.types.ResultMessage`'s ``session_id``).
        continue_conversation: Go on with the project's latest session.
        env: The environment for credentials and config paths (``os.environ`` when None).
        settings: nestor's settings to start from (``load_settings``); None loads the project's,
            its ``nestor.toml`` applied only when you trust its folder (``nestor trust``).

    """

    cwd: str | Path | None = None
    model: str | None = None
    system_prompt: str | Mapping[str, str] | None = None
    allowed_tools: Sequence[str] = field(default_factory=list[str])
    disallowed_tools: Sequence[str] = field(default_factory=list[str])
    permission_mode: PermissionMode | None = None
    can_use_tool: CanUseTool | None = None
    hooks: Mapping[str, Sequence[Any]] | None = None
    agents: Mapping[str, AgentDefinition] | None = None
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    resume: str | None = None
    continue_conversation: bool = False
    env: Mapping[str, str] | None = None
    settings: Settings | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the options make: the settings, the main agent's spec and the sub-agents' specs."""

    settings: Settings
    env: Mapping[str, str]
    main_spec: AgentSpec | None
    agents: tuple[AgentSpec, ...]


def prepare(options: AgentOptions) -> Prepared:
    """Check every option and build nestor's settings and specs from them.

    Raises:
        NestorError: An option is invalid (one line naming it and what it may be), or the
            project's config is.

    """
    _check_values(options)
    env: Mapping[str, str] = os.environ if options.env is None else options.env
    base = options.settings if options.settings is not None else _load(_project_root(options), env)
    removed = [entry for entry in options.disallowed_tools if split_tool_entry(entry).pattern is None]
    return Prepared(
        settings=_settings(base, options),
        env=env,
        main_spec=_main_spec(options, removed),
        agents=tuple(_agent_spec(name, definition) for name, definition in (options.agents or {}).items()),
    )


def _check_values(options: AgentOptions) -> None:
    for event in options.hooks or {}:
        if event not in HOOK_EVENTS:
            _invalid("hooks", event, f"an event of {', '.join(HOOK_EVENTS)}")
    modes = get_args(PermissionMode)
    if options.permission_mode is not None and options.permission_mode not in modes:
        _invalid("permission_mode", options.permission_mode, f"one of {', '.join(modes)}")
    if options.can_use_tool is not None and not callable(options.can_use_tool):
        _invalid("can_use_tool", options.can_use_tool, "an async function (tool_name, input, context)")
    if options.max_turns is not None and (not isinstance(options.max_turns, int) or options.max_turns < 1):
        _invalid("max_turns", options.max_turns, "a whole number of at least 1")
    budget = options.max_budget_usd
    if budget is not None and (
        not isinstance(budget, int | float) or isinstance(budget, bool) or budget <= 0
    ):
        _invalid("max_budget_usd", budget, "a number of dollars above 0")
    if options.settings is not None and not isinstance(options.settings, Settings):
        _invalid("settings", options.settings, "nestor's Settings (nestor.api.load_settings), not a path")
    for name in ("allowed_tools", "disallowed_tools"):
        rules = getattr(options, name)
        if isinstance(rules, str) or not all(isinstance(rule, str) and rule.strip() for rule in rules):
            _invalid(name, rules, 'a list of rules such as ["Read", "Bash(git status:*)"]')


def _invalid(option: str, value: object, expected: str) -> NoReturn:
    raise ConfigError(f"AgentOptions.{option} is {value!r}; it must be {expected}", hint=_OPTIONS_HINT)


def _project_root(options: AgentOptions) -> Path:
    root = Path(options.cwd) if options.cwd is not None else Path(os.getcwd())
    if not root.is_dir():
        _invalid("cwd", str(options.cwd), "an existing directory")
    return root.resolve()


def _load(root: Path, env: Mapping[str, str]) -> Settings:
    """The project's settings, its ``nestor.toml`` applied when the user trusts its folder."""
    try:
        trusted = TrustedFolders(resolve_data_dir(env)).is_trusted(root)
    except StoreError:  # an unreadable list of trusted folders: the safe side
        trusted = False
    return load_settings(root, env=env, trusted=trusted)


def _settings(base: Settings, options: AgentOptions) -> Settings:
    update: dict[str, Any] = {}
    if options.model is not None:
        try:
            large = ModelConfig(model=options.model)
        except ValidationError:
            _invalid("model", options.model, "'provider:model', e.g. 'anthropic:claude-sonnet-4-5'")
        update["models"] = base.models.model_copy(update={"large": large})
    if options.max_turns is not None:
        update["limits"] = base.limits.model_copy(update={"max_iterations": options.max_turns})
    if options.max_budget_usd is not None:
        update["agents"] = base.agents.model_copy(update={"max_cost_usd": float(options.max_budget_usd)})
    if options.allowed_tools or options.disallowed_tools or options.permission_mode == "plan":
        denied = (*options.disallowed_tools, *(PLAN_MODE_DENIED if options.permission_mode == "plan" else ()))
        update["permissions"] = PermissionsConfig(
            allow=(*base.permissions.allow, *options.allowed_tools),
            ask=base.permissions.ask,
            deny=(*base.permissions.deny, *denied),
        )
    if options.mcp_servers:
        update["mcp_servers"] = {**base.mcp_servers, **_mcp_servers(options.mcp_servers)}
        # A server of the program's own that takes a project server's name is the program's: no approval.
        kept = {
            name: server
            for name, server in base.project_mcp_servers.items()
            if name not in options.mcp_servers
        }
        update["project_mcp_servers"] = kept
    if options.permission_mode == "bypassPermissions":
        update["yolo"] = True
    return base.model_copy(update=update)


def _mcp_servers(servers: Mapping[str, Mapping[str, Any]]) -> dict[str, McpServerConfig]:
    """Claude's server configs (``.mcp.json``'s shape) as nestor's ``[mcp_servers]`` tables."""
    try:
        check_mcp_server_names(servers)
    except ValueError as error:
        raise ConfigError(f"AgentOptions.mcp_servers: {error}", hint=_OPTIONS_HINT) from None
    converted: dict[str, McpServerConfig] = {}
    for name, server in servers.items():
        if not isinstance(server, Mapping):
            _invalid(f"mcp_servers[{name!r}]", server, 'a dict such as {"command": "npx", "args": [...]}')
        table = dict(server)  # pyright: ignore[reportUnknownArgumentType]
        kind = table.pop("type", None)
        if kind == "sdk":
            raise ConfigError(
                f"AgentOptions.mcp_servers[{name!r}] is an in-process SDK server, which nestor does not run",
                hint="serve the tools over stdio or HTTP, or write them as nestor.extensions.Tool classes",
            )
        if kind is not None:
            table["transport"] = kind
        try:
            converted[name] = McpServerConfig.model_validate(table)
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            cause = f"{where}: {first['msg']}" if where else first["msg"]
            raise ConfigError(f"AgentOptions.mcp_servers[{name!r}] {cause}", hint=_OPTIONS_HINT) from None
    return converted


def _main_spec(options: AgentOptions, removed: Sequence[str]) -> AgentSpec | None:
    """The main agent's spec when an option changes it (its prompt or tools); None keeps nestor's."""
    prompt = options.system_prompt
    plan = options.permission_mode == "plan"
    if prompt is None and not removed and not plan:
        return None
    coder = builtin_spec("coder")
    text = coder.prompt
    if isinstance(prompt, str):
        text = prompt
    elif prompt is not None:
        if not isinstance(prompt, Mapping) or prompt.get("type") != "preset":  # pyright: ignore[reportUnnecessaryIsInstance]
            _invalid(
                "system_prompt",
                prompt,
                'a string, or {"type": "preset", "preset": "nestor", "append": "..."}',
            )
        if prompt.get("preset", "nestor") not in ("nestor", "claude_code"):
            _invalid("system_prompt", prompt, 'a preset named "nestor"')
        if append := prompt.get("append"):
            text = f"{text}\n\n{append}"
    if plan:
        text = f"{text}\n\n{_PLAN_PROMPT}"
    gone = {_tool_name(entry, "disallowed_tools") for entry in removed}
    if plan:
        gone.update(PLAN_MODE_DENIED)
    return replace(coder, prompt=text, tools=tuple(name for name in coder.tools or () if name not in gone))


def _agent_spec(name: str, definition: AgentDefinition) -> AgentSpec:
    """A sub-agent's spec from an :class:`AgentDefinition`, as a Claude Code agent file would give it."""
    if not isinstance(name, str) or not name.strip() or any(char.isspace() for char in name):  # pyright: ignore[reportUnnecessaryIsInstance]
        _invalid("agents", name, "a dict of names without spaces to AgentDefinition")
    if not isinstance(definition, AgentDefinition):  # pyright: ignore[reportUnnecessaryIsInstance]
        _invalid(f"agents[{name!r}]", definition, "an AgentDefinition(description, prompt, tools, model)")
    if not definition.description.strip() or not definition.prompt.strip():
        _invalid(f"agents[{name!r}]", definition, "an AgentDefinition with a description and a prompt")
    tools = None
    if definition.tools is not None:
        tools = tuple(dict.fromkeys(_tool_name(tool, f"agents[{name!r}].tools") for tool in definition.tools))
    model = definition.model
    if model is not None and model.startswith("claude-"):
        model = f"anthropic:{model}"  # Claude's full ids, as its agent files write them
    return AgentSpec(
        name=name,
        description=definition.description,
        prompt=definition.prompt,
        tools=tools,
        model=model,
        source="user",
        ecosystem="claude",
    )


def _tool_name(entry: str, option: str) -> str:
    """Nestor's name for a tool written in any ecosystem's spelling (MCP tools as they are)."""
    name = split_tool_entry(entry).name
    if name.startswith("mcp__"):
        return name
    mapped = map_tool_name(name)
    if mapped is None:
        said = describe_unknown_tool(name, consequence="")
        raise ConfigError(
            f"AgentOptions.{option}: {said}", hint="name one of nestor's tools, or Claude Code's"
        )
    return mapped
