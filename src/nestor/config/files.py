"""Reading one config file: TOML, bounded in size and depth, its problems in one line each."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nestor.core.errors import ConfigError
from nestor.core.files import read_bounded_text

_MAX_CONFIG_BYTES = 1_000_000
_MAX_CONFIG_DEPTH = 32  # the deepest setting (providers.NAME.models ...) is four or five levels down


@dataclass(frozen=True, slots=True)
class Layer:
    """One source's raw data; ``path`` is set for files, ``label`` names a variable or flag."""

    label: str
    data: dict[str, Any]
    path: Path | None = None


def read_file(path: Path, *, inside: Path | None = None) -> Layer | None:
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
    return Layer(str(path), data, path)


def read_json_file(path: Path, *, inside: Path | None = None, what: str = "a JSON config") -> Any:
    """Parse one JSON file (Claude Code's ``.mcp.json``, its ``settings.json``); None when it does not exist.

    Raises:
        ConfigError: The file cannot be read, is larger than 1 MB, or is not JSON (its line named).

    """
    try:
        read = read_bounded_text(path, limit_bytes=_MAX_CONFIG_BYTES, inside=inside, errors="strict")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{path}: cannot read: {reason}", hint="fix it or remove it") from None
    if read.cut:
        raise ConfigError(f"{path}: larger than {_MAX_CONFIG_BYTES:,} bytes", hint=f"is it really {what}?")
    try:
        return json.loads(read.text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ConfigError(f"{path}{where}: invalid JSON: {exc}", hint=f"fix the JSON of {path}") from None


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
