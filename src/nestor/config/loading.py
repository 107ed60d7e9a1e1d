"""Loading the settings: every source in order of precedence, validated into :class:`Settings`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from nestor.config.files import Layer, read_file
from nestor.config.hooks import (
    CLAUDE_SETTINGS_FILES,
    ConfiguredHook,
    check_hooks_table,
    claude_user_settings,
    configured_hooks,
    read_claude_settings_hooks,
)
from nestor.config.mcp_json import MCP_JSON_NAME, mcp_json_server_names, read_mcp_json
from nestor.config.mcp_project import ProjectMcp, allowed_variables, project_mcp
from nestor.config.paths import PROJECT_CONFIG_NAME, default_user_config_path, resolve_data_dir
from nestor.config.sections import ConfigDocument
from nestor.config.settings import IgnoredSetting, Settings
from nestor.config.trust import project_data
from nestor.config.validation import validate
from nestor.core.errors import ConfigError


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
    layers: list[Layer] = []
    project_ignored: list[IgnoredSetting] = []
    user_layer = read_file(user_path)
    user_data = user_layer.data if user_layer else {}
    if "hooks" in user_data:  # checked first: an unknown event is named as such, with its file
        check_hooks_table(user_data["hooks"], str(user_path))
    if user_layer is not None:
        layers.append(user_layer)
    allowed = allowed_variables(user_data, str(user_path))
    ignored: list[IgnoredSetting] = []
    mcp_json = project_root / MCP_JSON_NAME
    project_layer = read_file(project_root / PROJECT_CONFIG_NAME, inside=project_root)
    data: dict[str, Any] = {}
    if project_layer is not None:
        data, project_ignored = project_data(project_layer.data, user_data, trusted=trusted)
    mcp = ProjectMcp()
    if trusted:
        json_tables = read_mcp_json(mcp_json, inside=project_root)
        mcp = project_mcp(json_tables, data.get("mcp_servers"), user_data=user_data, allowed=allowed, env=env)
        if json_tables is not None:
            layers.append(Layer(str(mcp_json), {"mcp_servers": mcp.json_tables}, mcp_json))
        if "mcp_servers" in data:
            data["mcp_servers"] = mcp.toml_tables
    else:
        names = mcp_json_server_names(mcp_json, inside=project_root)
        ignored.extend(IgnoredSetting(f"{MCP_JSON_NAME} server {name}", "untrusted") for name in names)
    project_hooks: list[ConfiguredHook] = []
    if "hooks" in data and project_layer is not None:  # a trusted project's: kept apart, approved one by one
        table = check_hooks_table(data.pop("hooks"), project_layer.label)
        project_hooks = configured_hooks(table, PROJECT_CONFIG_NAME, project=True)
    project_hooks += _project_claude_hooks(project_root, ignored, trusted=trusted)
    if project_layer is not None:
        ignored.extend(project_ignored)
        layers.append(Layer(project_layer.label, data, project_layer.path))
    ignored.extend(mcp.ignored)
    for name, key_path in _ENV_PATHS.items():
        if value := env.get(name, "").strip():
            layers.append(Layer(name, _nest(key_path, value)))
    for field in fields(CliOverrides):
        value = getattr(cli, field.name)
        if value is not None and field.name in _CLI_PATHS:
            flag = _CLI_FLAGS.get(field.name, "--" + field.name.replace("_", "-"))
            layers.append(Layer(flag, _nest(_CLI_PATHS[field.name], value)))

    if project_layer is not None and project_ignored:
        # Mistakes are reported in keys that do not apply yet too: the file is checked as written.
        validate([project_layer if layer.path == project_layer.path else layer for layer in layers])
    document = validate(layers)
    claude_settings = claude_user_settings(env)
    user_hooks = configured_hooks(document.hooks, str(user_path), project=False)
    if (claude_table := read_claude_settings_hooks(claude_settings)) is not None:
        user_hooks += configured_hooks(claude_table, str(claude_settings), project=False)
    return Settings(
        **{name: getattr(document, name) for name in ConfigDocument.model_fields},
        project_root=project_root.absolute(),
        data_dir=resolve_data_dir(env),
        yolo=bool(cli.yolo),
        sources=tuple(str(layer.path) if layer.path else layer.label for layer in layers),
        project_trusted=trusted,
        ignored=tuple(ignored),
        project_mcp_servers=mcp.servers,
        configured_hooks=(*user_hooks, *project_hooks),
    )


def _project_claude_hooks(
    project_root: Path, ignored: list[IgnoredSetting], *, trusted: bool
) -> list[ConfiguredHook]:
    """A trusted project's Claude Code settings' hooks; an untrusted one's are named as ignored."""
    hooks: list[ConfiguredHook] = []
    for name in CLAUDE_SETTINGS_FILES:
        path = project_root / name
        if not trusted:
            try:  # read, never run: only to name what was left out
                present = read_claude_settings_hooks(path, inside=project_root) is not None
            except ConfigError:
                present = path.is_file()
            if present:
                ignored.append(IgnoredSetting(f"{name} hooks", "untrusted"))
            continue
        table = read_claude_settings_hooks(path, inside=project_root)
        if table is not None:
            hooks += configured_hooks(table, name, project=True)
    return hooks


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


def _nest(key_path: tuple[str, ...], value: object) -> dict[str, Any]:
    data: dict[str, Any] = {key_path[-1]: value}
    for key in reversed(key_path[:-1]):
        data = {key: data}
    return data
