"""Where nestor's config and data live: the user config file, the project's, the data dir."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PROJECT_CONFIG_NAME = "nestor.toml"


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


def scratch_dir(data_dir: Path, session_id: str) -> Path:
    """Where a session keeps temporary files (large tool results): made on first use, deleted with it."""
    return data_dir / "scratch" / session_id


def mcp_log_dir(data_dir: Path) -> Path:
    """Where MCP servers' stderr logs go: ``<data dir>/mcp/logs/<server>.log``."""
    return data_dir / "mcp" / "logs"


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
