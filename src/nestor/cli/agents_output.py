"""How ``nestor agents`` shows agents and problems: JSON forms, table rows, problem lines, paths."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.app.agent_files import AgentFileProblem, AgentSpec


def spec_summary(spec: AgentSpec) -> dict[str, Any]:
    """The JSON form of a spec in a listing (its prompt left out)."""
    return {
        "name": spec.name,
        "description": spec.description,
        "source": spec.source,
        "ecosystem": spec.ecosystem,
        "path": path_or_none(spec.path),
        "mode": spec.mode,
        "model": spec.model,
        "tools": None if spec.tools is None else list(spec.tools),
        "disallowed_tools": list(spec.disallowed_tools),
    }


def spec_to_dict(spec: AgentSpec) -> dict[str, Any]:
    """The JSON form of every field of a spec (``tools`` None means every tool of its parent)."""
    return spec_summary(spec) | {
        "temperature": spec.temperature,
        "max_turns": spec.max_turns,
        "timeout": spec.max_time_s,
        "max_context_tokens": spec.max_context_tokens,
        "thoroughness": spec.thoroughness,
        "rules": [str(path) for path in spec.rule_files],
        "skills": [str(path) for path in spec.skill_files],
        "color": spec.color,
        "persist": spec.persist,
        "background": spec.background,
        "inherit_context": spec.inherit_context,
        "project_instructions": spec.project_instructions,
        "permission": [{"action": rule.action, "rule": rule.rule} for rule in spec.permission],
        "prompt": spec.prompt,
    }


def problem_to_dict(problem: AgentFileProblem) -> dict[str, Any]:
    """The JSON form of a problem with an agent file."""
    return {
        "path": str(problem.path),
        "line": problem.line,
        "key": problem.key,
        "message": problem.message,
        "severity": problem.severity,
    }


def format_problem(problem: AgentFileProblem) -> str:
    """``path:line: key: message (severity)``, the path relative to the current directory when inside it."""
    where = f"{display(problem.path)}:{problem.line}"
    text = f"{where}: {problem.key}: {problem.message}" if problem.key else f"{where}: {problem.message}"
    return f"{text} ({problem.severity})"


def spec_row(spec: AgentSpec, *, shadowed: bool) -> tuple[str, ...]:
    """One agent's row of ``nestor agents list``: name, source, format, mode, model, tools, description."""
    tools = "all" if spec.tools is None else ", ".join(spec.tools) or "(none)"
    if spec.disallowed_tools:
        tools += " but not " + ", ".join(spec.disallowed_tools)
    description = spec.description.strip().split("\n", 1)[0]
    return (
        spec.name + (" (shadowed)" if shadowed else ""),
        spec.source,
        spec.ecosystem,
        spec.mode,
        spec.model or "inherit",
        tools,
        description,
    )


def print_table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Print ``rows`` as a table on a terminal, one line per row; tab-separated when piped."""
    if not sys.stdout.isatty():
        # Piped: whole values, tab-separated, for grep and cut; a table would be cut to 80 columns.
        for row in (columns, *rows):
            print("\t".join(row))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    # One line per agent: the last column (the description) is cut to what the terminal has left.
    widths = [max(len(row[index]) for row in (columns, *rows)) for index in range(len(columns) - 1)]
    room = console.width - sum(widths) - 2 * (len(columns) - 1)
    if room >= 20:
        rows = [(*row[:-1], row[-1] if len(row[-1]) <= room else row[-1][: room - 3] + "...") for row in rows]
    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def value_text(key: str, value: Any) -> str:
    """One field of ``nestor agents show`` as text."""
    if key == "tools" and value is None:
        return "all (its parent's)"
    if key == "model" and value is None:
        return "inherit (its parent's)"
    if key == "permission":
        return ", ".join(f"{rule['action']} {rule['rule']}" for rule in value) or "-"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "-"  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if value is None:
        return "-"
    return str(value).lower() if isinstance(value, bool) else str(value)


def display(path: Path | None) -> str:
    """``path`` relative to the current directory when inside it; built-in agents have none."""
    if path is None:
        return "(built into nestor)"
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def path_or_none(path: Path | None) -> str | None:
    """``path`` as a string for JSON, or None."""
    return None if path is None else str(path)
