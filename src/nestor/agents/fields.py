"""An agent file's fields as every reader reads them: typed key access, problems, the read context.

A reader never raises for a bad file: it collects :class:`AgentFileProblem` entries (errors skip
the file, warnings do not) so one broken file never hides the others and every mistake is reported
with its file, line and key at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from nestor.agents.frontmatter import FrontMatter
from nestor.agents.frontmatter_repair import Repair
from nestor.agents.spec import AgentSource, AgentSpec, PermissionAction, PermissionRuleSpec
from nestor.agents.tool_names import (
    NESTOR_TOOLS,
    describe_unknown_tool,
    expand_tool_wildcard,
    is_wildcard,
    map_tool_name,
    split_tool_entry,
)
from nestor.tools.mcp.names import is_mcp_name

Severity: TypeAlias = Literal["error", "warning"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""What an agent, rule or skill name may look like."""

# Each suggestion for an unknown tool compares it with every name nestor knows (thousands: seconds).
_SUGGESTED_UNKNOWN_TOOLS = 20
_RULE_TEXT = re.compile(r"^\s*([A-Za-z_][\w-]*\*?)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_ACTION_ORDER: dict[PermissionAction, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True, slots=True)
class AgentFileProblem:
    """Something wrong (``error``: the file is skipped) or doubtful (``warning``) in an agent file.

    Attributes:
        path: The agent file.
        line: The line (1-based) the problem is on.
        key: The front-matter key concerned, or "" for the file as a whole.
        message: What is wrong and what to do.
        severity: ``error`` or ``warning``.

    """

    path: Path
    line: int
    key: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class ReadContext:
    """Where an agent file was found and how to read it.

    Attributes:
        path: The file.
        source: ``project``, ``user`` or ``builtin``.
        ecosystem: The file format (``nestor``, ``claude``, ``opencode``...).
        default_name: The name when the file gives none (its stem, or its folder for deepagents).
        config_dirs: Directories holding ``rules/`` and ``skills/``, searched in order.
        inside: For a project's agent: the project folder, which the file and every file it
            attaches must really lie in (a link to ``~/.ssh`` is not read).

    """

    path: Path
    source: AgentSource
    ecosystem: str
    default_name: str
    config_dirs: tuple[Path, ...] = ()
    inside: Path | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The outcome of reading one agent file.

    Attributes:
        spec: The agent, or None when the file has errors (or disables itself).
        problems: Everything reported about the file.
        depends_on: Other files the result depends on (rules, skills, prompt files), existing or not,
            so a registry can re-read the agent file when one of them appears or changes.
        name_line: The line of the name (for problems about the agent as a whole).
        values: How many values its front matter holds (:attr:`FrontMatter.values`), which the
            registry counts against the limits of a project's agent files.
        repairs: What was repaired in its front matter (:attr:`FrontMatter.repairs`).

    """

    spec: AgentSpec | None
    problems: tuple[AgentFileProblem, ...] = ()
    depends_on: tuple[Path, ...] = ()
    name_line: int = 1
    values: int = 0
    repairs: tuple[Repair, ...] = ()


def canonical_rules(rules: Iterable[PermissionRuleSpec]) -> tuple[PermissionRuleSpec, ...]:
    """Rules grouped allow, ask, deny (each group in written order), without repeats.

    nestor decides by action (deny, then ask, then allow), not by position, so this order loses
    nothing and lets a spec be written back as an ``allow``/``ask``/``deny`` mapping.
    """
    unique = list(dict.fromkeys(rules))
    return tuple(sorted(unique, key=lambda rule: _ACTION_ORDER[rule.action]))


class Fields:
    """Typed access to the keys of one agent file, recording a problem for every bad value.

    Every getter returns None (or a default) for a missing or invalid value; an invalid value also
    records an error, after which :attr:`failed` is True and :meth:`build` yields no spec.
    """

    def __init__(self, context: ReadContext, document: FrontMatter) -> None:
        self.context = context
        self.document = document
        self.problems: list[AgentFileProblem] = []
        self.depends_on: list[Path] = []
        self._unknown_tools = 0

    @property
    def failed(self) -> bool:
        """True once any error was recorded."""
        return any(problem.severity == "error" for problem in self.problems)

    def error(self, key: str, message: str, item: int | str | None = None) -> None:
        """Record an error at ``key`` (or one of its items)."""
        self._add(key, message, item, "error")

    def warn(self, key: str, message: str, item: int | str | None = None) -> None:
        """Record a warning at ``key`` (or one of its items)."""
        self._add(key, message, item, "warning")

    def _add(self, key: str, message: str, item: int | str | None, severity: Severity) -> None:
        line = self.document.line(key or None, item)
        self.problems.append(AgentFileProblem(self.context.path, line, key, message, severity))

    def get(self, key: str) -> Any:
        """The raw value of ``key``; None when absent or empty (``key:`` with no value)."""
        return self.document.data.get(key)

    def check_keys(
        self,
        known: Iterable[str],
        *,
        unknown: Severity,
        unsupported: Iterable[str] = (),
        ignored: Iterable[str] = (),
    ) -> None:
        """Report keys outside ``known``.

        Args:
            known: The keys the reader uses.
            unknown: Severity for any other key.
            unsupported: Keys of the format nestor does not support (always a warning).
            ignored: Keys of the format that mean nothing to nestor (no problem at all).

        """
        known_set, unsupported_set, ignored_set = set(known), set(unsupported), set(ignored)
        for key in self.document.data:
            if key in known_set or key in ignored_set:
                continue
            if key in unsupported_set:
                self.warn(key, "not supported by nestor, ignored")
            elif unknown == "error":
                self.error(key, "unknown key; known keys: " + ", ".join(sorted(known_set)))
            else:
                self.warn(key, f"not a {self.context.ecosystem} agent key nestor knows, ignored")

    def string(self, key: str, *, required: bool = False, what: str = "") -> str | None:
        """A non-empty string value (numbers are accepted as written, e.g. a model id)."""
        value = self.get(key)
        if value is None or value == "":
            if required:
                self.error(key, f"missing (required{what})")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.error(key, f"must be a string, not {_type_name(value)}")
            return None
        return str(value).strip()

    def number(self, key: str, *, minimum: float = 0.0, maximum: float | None = None) -> float | None:
        """A number between ``minimum`` and ``maximum`` (inclusive)."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(key, f"must be a number, not {_type_name(value)}")
            return None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum:g}" if maximum is not None else ""
            self.error(key, f"must be at least {minimum:g}{upper}, not {value}")
            return None
        return float(value)

    def positive_number(self, key: str) -> float | None:
        """A number greater than zero (durations)."""
        value = self.number(key)
        if value is not None and value <= 0:
            self.error(key, f"must be greater than 0, not {value:g}")
            return None
        return value

    def integer(self, key: str, *, minimum: int = 1) -> int | None:
        """A whole number ``>= minimum``."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(key, f"must be a whole number, not {_type_name(value)}")
            return None
        if value < minimum:
            self.error(key, f"must be at least {minimum}, not {value}")
            return None
        return value

    def boolean(self, key: str) -> bool | None:
        """``true`` or ``false``."""
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.error(key, f"must be true or false, not {value!r}")
            return None
        return value

    def choice(self, key: str, options: Iterable[str]) -> str | None:
        """One of ``options``."""
        allowed = tuple(options)
        value = self.string(key)
        if value is not None and value not in allowed:
            self.error(key, f"must be one of {', '.join(allowed)}, not {value!r}")
            return None
        return value

    def entries(self, key: str) -> list[tuple[str, int | None]] | None:
        """A YAML list of strings or a comma-separated string, each entry with its item index."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return [(part.strip(), None) for part in _split_commas(value) if part.strip()]
        if not isinstance(value, list):
            self.error(key, f"must be a list or a comma-separated string, not {_type_name(value)}")
            return None
        result: list[tuple[str, int | None]] = []
        for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if not isinstance(item, str) or not item.strip():
                self.error(key, f"entry {index + 1} must be a non-empty string, not {item!r}", index)
                continue
            result.append((item.strip(), index))
        return result

    def name(self, *, required: bool = False, key: str | None = "name") -> str | None:
        """The agent's name: the ``key`` value, else the context's default (None: always the default)."""
        present = key is not None and self.get(key) is not None
        value = self.string(key, required=required) if key is not None else None
        if value is None:
            if required or present:
                return None
            value = self.context.default_name
            if not NAME_PATTERN.match(value):
                self.error("", f"the agent name {value!r} (from the file name) is invalid: {_NAME_RULE}")
                return None
            return value
        if not NAME_PATTERN.match(value):
            self.error(key or "", f"invalid name {value!r}: {_NAME_RULE}")
            return None
        return value

    def description(self, *, required: bool) -> str:
        """The description; a missing one is an error when the format requires it, else a warning."""
        value = self.string(
            "description", required=required, what=f" in {self.context.ecosystem} agent files"
        )
        if value is None and not required:
            self.warn("description", "no description: the main agent sees only the name when delegating")
        return value or ""

    def tools(self, key: str, *, wildcards: bool = False) -> tuple[str, ...] | None:
        """Tool names mapped onto nestor's; unknown ones are reported and left out."""
        entries = self.entries(key)
        if entries is None:
            return None
        tools: list[str] = []
        for text, index in entries:
            tools.extend(self.tool(key, text, index, wildcards=wildcards))
        return tuple(dict.fromkeys(tools))

    def tool(self, key: str, text: str, index: int | str | None, *, wildcards: bool) -> tuple[str, ...]:
        """The nestor tools one entry means (several for a wildcard); an unknown one is reported."""
        entry = split_tool_entry(text)
        if wildcards and is_wildcard(entry.name):
            expanded = expand_tool_wildcard(entry.name)
            if not expanded:
                self.warn(key, f"{text!r} matches none of nestor's tools: {', '.join(NESTOR_TOOLS)}", index)
            return expanded
        if is_mcp_name(entry.name):  # an MCP server's tool (or all of them): known once servers start
            return (entry.name,)
        tool = map_tool_name(entry.name)
        if tool is None:
            self.warn(key, self._unknown_tool(entry.name), index)
            return ()
        if entry.pattern is not None:
            effect = "all of it is removed" if "disallow" in key.lower() else "the agent gets all of it"
            self.warn(
                key,
                f"{text!r}: a tool list cannot limit {tool} to a pattern ({entry.pattern}), so {effect}; "
                f"write a permission rule ({tool}({entry.pattern})) in a nestor agent file instead",
                index,
            )
        return (tool,)

    def _unknown_tool(self, name: str) -> str:
        """What to say of a tool name nestor does not know (a close name suggested for a file's first few)."""
        self._unknown_tools += 1
        return describe_unknown_tool(name, suggest=self._unknown_tools <= _SUGGESTED_UNKNOWN_TOOLS)

    def files(self, key: str, kind: Literal["rules", "skills"]) -> tuple[Path, ...]:
        """Rule or skill files named by ``key``; a name is looked up in the context's config dirs."""
        entries = self.entries(key) or []
        found: list[Path] = []
        for text, index in entries:
            path = self._locate(key, kind, text, index)
            if path is not None:
                found.append(path)
        return tuple(dict.fromkeys(found))

    def _may_attach(self, candidate: Path, *, by_name: bool) -> bool:
        """A project agent attaches files of the project, or the user's own rules and skills by name.

        A path it writes out (``../../.ssh/id_rsa``, ``~/x``) or a link in the project must really
        lead into the project; a rule or skill found by name in one of the user's config dirs is the
        user's own.
        """
        project = self.context.inside
        if project is None or Path(os.path.realpath(candidate)).is_relative_to(os.path.realpath(project)):
            return True
        user_dirs = [base for base in self.context.config_dirs if not base.is_relative_to(project)]
        return by_name and any(candidate.is_relative_to(base) for base in user_dirs)

    def _locate(self, key: str, kind: str, text: str, index: int | None) -> Path | None:
        if "/" in text or text.endswith(".md"):
            candidates = [(self.context.path.parent / text).expanduser()]
        elif not NAME_PATTERN.match(text):
            self.error(key, f"invalid {kind[:-1]} name {text!r}: {_NAME_RULE}", index)
            return None
        elif kind == "rules":
            candidates = [base / "rules" / f"{text}.md" for base in self.context.config_dirs]
        else:
            candidates = [
                path
                for base in self.context.config_dirs
                for path in (base / "skills" / text / "SKILL.md", base / "skills" / f"{text}.md")
            ]
        self.depends_on.extend(candidates)
        for candidate in candidates:
            if candidate.is_file():
                if not self._may_attach(candidate, by_name="/" not in text and not text.endswith(".md")):
                    self.error(key, f"{kind[:-1]} {text!r} links outside the project ({candidate})", index)
                    return None
                return candidate
        looked = ", ".join(str(candidate) for candidate in candidates) or "(nowhere)"
        self.error(key, f"{kind[:-1]} {text!r} not found; looked for {looked}", index)
        return None

    def rule(self, key: str, action: str, text: str, item: int | str | None) -> PermissionRuleSpec | None:
        """A permission rule ``tool`` or ``tool(pattern)`` with its tool mapped onto nestor's."""
        if action not in _ACTION_ORDER:
            self.error(key, f"permission action must be allow, ask or deny, not {action!r}", item)
            return None
        match = _RULE_TEXT.match(text)
        if match is None:
            self.error(key, f"invalid permission rule {text!r}: write 'tool' or 'tool(pattern)'", item)
            return None
        tool = match.group(1) if is_mcp_name(match.group(1)) else map_tool_name(match.group(1))
        if tool is None:
            self.warn(key, "permission rule dropped: " + self._unknown_tool(match.group(1)), item)
            return None
        pattern = match.group(2)
        rule = tool if pattern is None or pattern.strip() in ("", "*") else f"{tool}({pattern.strip()})"
        return PermissionRuleSpec(action, rule)  # pyright: ignore[reportArgumentType]

    def build(self, **values: Any) -> ReadResult:
        """The result: a spec from ``values`` (plus source, ecosystem, path) unless an error was recorded."""
        spec = None
        if not self.failed:
            context = self.context
            spec = AgentSpec(**values, source=context.source, ecosystem=context.ecosystem, path=context.path)
        return self.result(spec)

    def result(self, spec: AgentSpec | None) -> ReadResult:
        """A result carrying this file's problems and dependencies."""
        return ReadResult(
            spec=spec,
            problems=tuple(self.problems),
            depends_on=tuple(dict.fromkeys(self.depends_on)),
            name_line=self.document.line("name") if "name" in self.document.data else 1,
            values=self.document.values,
            repairs=self.document.repairs,
        )


_NAME_RULE = "use letters, digits, '_', '.' and '-', starting with a letter or digit"


def plain_model(value: str | None) -> str | None:
    """A model as written, except ``inherit`` (the parent's model), which is None."""
    return None if value is None or value.lower() == "inherit" else value


def _split_commas(text: str) -> list[str]:
    """Split on commas outside parentheses, so ``Bash(git add, git commit)`` stays one entry."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    parts.append(current)
    return parts


def _type_name(value: object) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "true/false", int: "a number"}
    return names.get(type(value), f"a {type(value).__name__}")
