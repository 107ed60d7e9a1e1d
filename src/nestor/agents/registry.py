"""The agent registry: every agent spec nestor knows, from every directory and format, kept current.

Where agents come from, highest precedence first:

1. the project: ``.nestor/agents``, then ``.claude/agents``, ``.opencode/agent(s)``,
   ``.gemini/agents``, ``.emdash/agents``, ``.mini-cc/agents``, ``.deepagents/agents``;
2. the user: ``<user_config_dir>/agents``, then ``~/.claude/agents``,
   ``~/.config/opencode/agent(s)``, ``~/.gemini/agents``, ``~/.code_ally/agents``,
   ``~/.deepagents/agents``;
3. the agents built into nestor (``nestor/agents/builtin/*.md``).

A project's agent files come with the repository: until the user trusts the folder, a
``provider:model`` they name is ignored (the agent runs on its parent's model), so a cloned
repository cannot choose where the conversation goes; :meth:`AgentRegistry.untrusted_models` lists
what was ignored. The MCP servers they define are ignored too (a server is a command nestor would
run): :meth:`AgentRegistry.untrusted_servers` lists those agents.

When two definitions share a name the higher one wins and the other is reported as shadowed. Every
public call first checks the directories (a listing and a ``stat`` per file, no parsing), then
re-reads only the files that changed, appeared or disappeared, so edits apply without a restart.

A repository can hold any number of agent files, and every one is read before the first request:
the project's are read within :class:`~nestor.agents.file_limits.AgentFileLimits` (files, bytes,
front-matter values, directory entries), in precedence order, and :meth:`AgentRegistry.read_limit`
names where reading stopped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TypeAlias

from nestor.agents.fields import AgentFileProblem, ReadContext, ReadResult
from nestor.agents.file_limits import PROJECT_LIMITS, AgentFileLimits, LimitTally
from nestor.agents.listing import agent_names
from nestor.agents.locations import AgentLocation, agent_locations, list_agent_files
from nestor.agents.readers import ECOSYSTEMS, read_agent_file, read_agent_text
from nestor.agents.spec import AgentSource, AgentSpec
from nestor.config.paths import default_user_config_path
from nestor.core.errors import UnknownAgentError

_Fingerprint: TypeAlias = tuple[int, int, int, int]

_LEVEL_RANK: dict[AgentSource, int] = {"project": 0, "user": 1, "builtin": 2}
_BUILTIN_PACKAGE = "nestor.agents.builtin"
# "-compact" files are variants of a built-in's prompt for small models, not agents of their own.
_VARIANT_SUFFIX = "-compact"


@dataclass(slots=True)
class _CachedFile:
    context: ReadContext
    fingerprint: _Fingerprint
    dependencies: tuple[_Fingerprint | None, ...]
    result: ReadResult


class AgentRegistry:
    """Every agent spec of one project: built-in, the user's and the project's, in every format.

    Creating a registry touches no file; the first call reads the directories.
    """

    def __init__(
        self,
        project_root: Path,
        *,
        home: Path,
        user_config_dir: Path,
        builtin: bool = True,
        trusted: bool = True,
        limits: AgentFileLimits = PROJECT_LIMITS,
    ) -> None:
        """Create a registry.

        Args:
            project_root: The project whose agent directories are read.
            home: The user's home directory (for ``~/.claude``, ``~/.gemini`` and the others).
            user_config_dir: nestor's user configuration directory (``~/.config/nestor``).
            builtin: Include the agents shipped with nestor.
            trusted: The user trusts the project's folder, so its agent files choose their model.
            limits: How much of the project's agent files is read (the user's are not limited).

        """
        self._project_root = project_root
        self._trusted = trusted
        self._limits = limits
        self._limit_problem: AgentFileProblem | None = None
        self._all_locations = agent_locations(project_root, home=home, user_config_dir=user_config_dir)
        self._locations: tuple[AgentLocation, ...] | None = None
        self._include_builtin = builtin
        self._builtin: tuple[ReadResult, ...] | None = None
        self._files: dict[Path, _CachedFile] = {}
        self._stale = True
        self._effective: dict[str, AgentSpec] = {}
        self._shadowed: list[AgentSpec] = []
        self._problems: list[AgentFileProblem] = []
        self._untrusted_models: list[AgentSpec] = []
        self._untrusted_servers: list[AgentSpec] = []
        self._defined: dict[str, AgentSpec] = {}

    def define(self, spec: AgentSpec) -> None:
        """Add ``spec``, defined in code by the embedder (the SDK's ``agents`` option), for this process.

        It takes precedence over every file and built-in agent of its name, as the agents a Claude
        Agent SDK program passes do over the ones on disk; the user's program chose it.
        """
        self._defined[spec.name] = spec
        self._stale = True

    def specs(self) -> list[AgentSpec]:
        """The effective specs (the winner of each name), sorted by name."""
        self._refresh()
        return [self._effective[name] for name in sorted(self._effective)]

    def delegable(self) -> list[AgentSpec]:
        """The effective specs the task tool may start (mode ``subagent`` or ``all``), sorted by name."""
        return [spec for spec in self.specs() if spec.delegable]

    def get(self, name: str) -> AgentSpec:
        """The effective spec called ``name`` (a unique case-insensitive match is accepted too).

        Raises:
            UnknownAgentError: No agent has that name; the message lists the delegable agents.

        """
        self._refresh()
        spec = self._effective.get(name)
        if spec is not None:
            return spec
        folded = [candidate for key, candidate in self._effective.items() if key.lower() == name.lower()]
        if len(folded) == 1:
            return folded[0]
        message = f"unknown agent type {name!r}; available agents: {agent_names(self.delegable())}"
        broken = self._broken_definition(name)
        if broken is not None:
            message += f". {broken.path} defines it but could not be loaded: {broken.message}"
        elif self._limit_problem is not None:
            stopped = self._limit_problem.path
            message += f". Not every agent file of the project was read: nestor stopped at {stopped}"
        raise UnknownAgentError(
            message,
            hint=f"use one of the available agent types, or define {name!r} in "
            f"{self.project_agents_dir() / (name + '.md')} (nestor agents create)",
        )

    def problems(self) -> list[AgentFileProblem]:
        """Every error and warning about the agent files, shadowed definitions included."""
        self._refresh()
        return list(self._problems)

    def untrusted_models(self) -> list[AgentSpec]:
        """Project agents whose ``model`` was ignored because the folder is not trusted (as written)."""
        self._refresh()
        return list(self._untrusted_models)

    def untrusted_servers(self) -> list[AgentSpec]:
        """Project agents whose own MCP servers were ignored because the folder is not trusted."""
        self._refresh()
        return list(self._untrusted_servers)

    def repaired(self) -> list[ReadContext]:
        """The agent files whose front matter loaded only after a repair (none ignored), by path."""
        self._refresh()
        repaired = [
            cached.context
            for cached in self._files.values()
            if cached.result.repairs and all(repair.kind != "ignored" for repair in cached.result.repairs)
        ]
        return sorted(repaired, key=lambda context: str(context.path))

    def shadowed(self) -> list[AgentSpec]:
        """Valid definitions hidden by another of the same name with higher precedence."""
        self._refresh()
        return list(self._shadowed)

    def project_agents_dir(self) -> Path:
        """Where the project's own agents live (``<project>/.nestor/agents``)."""
        return self._project_root / ".nestor" / "agents"

    def locations(self) -> tuple[AgentLocation, ...]:
        """The directories agents are read from, in precedence order."""
        return self._all_locations

    def read_limit(self) -> AgentFileProblem | None:
        """The warning that the project's agent files passed the limits (where reading stopped), or None."""
        self._refresh()
        return self._limit_problem

    def _refresh(self) -> None:
        if self._include_builtin and self._builtin is None:
            self._builtin = _read_builtin()
            self._stale = True
        tally = LimitTally(self._limits)
        read: set[Path] = set()
        for location in self._active_locations():
            project = location.source == "project"
            if project and not tally.listing:
                continue
            for path, default_name in list_agent_files(location, tally if project else None):
                if path in read:
                    continue
                if self._check_file(location, path, default_name, tally if project else None):
                    read.add(path)
                elif project and not tally.reading:
                    break
        for path in [path for path in self._files if path not in read]:
            del self._files[path]
            self._stale = True
        limit_problem = tally.problem()
        if limit_problem != self._limit_problem:
            self._limit_problem = limit_problem
            self._stale = True
        if self._stale:
            self._resolve()
            self._stale = False

    def _check_file(
        self, location: AgentLocation, path: Path, default_name: str, tally: LimitTally | None
    ) -> bool:
        """Read ``path`` unless its cached result is current; False when it is gone or past the limits."""
        fingerprint = _fingerprint(path)
        if fingerprint is None:
            return False
        size = fingerprint[2]
        if tally is not None and not tally.admit(path, size):
            return False
        cached = self._files.get(path)
        if (
            cached is None
            or cached.fingerprint != fingerprint
            or cached.dependencies != _fingerprints(cached.result.depends_on)
        ):
            inside = self._project_root if location.source == "project" else None
            context = ReadContext(
                path, location.source, location.ecosystem, default_name, location.config_dirs, inside
            )
            result = read_agent_file(context)
            cached = _CachedFile(context, fingerprint, _fingerprints(result.depends_on), result)
            self._files[path] = cached
            self._stale = True
        if tally is not None:  # each file it attaches is looked for again on every refresh
            tally.add(size, cached.result.values + len(cached.result.depends_on))
        return True

    def _active_locations(self) -> tuple[AgentLocation, ...]:
        """The locations, without a directory seen before (the home directory as the project)."""
        if self._locations is None:
            unique: dict[str, AgentLocation] = {}
            for location in self._all_locations:
                unique.setdefault(os.path.realpath(location.directory), location)
            self._locations = tuple(unique.values())
        return self._locations

    def _resolve(self) -> None:
        results = list(self._builtin or ()) + [cached.result for cached in self._files.values()]
        problems = [problem for result in results for problem in result.problems]
        if self._limit_problem is not None:
            problems.append(self._limit_problem)
        name_lines = {id(result.spec): result.name_line for result in results if result.spec is not None}
        candidates = sorted((result.spec for result in results if result.spec is not None), key=_precedence)
        self._untrusted_models, self._untrusted_servers = [], []
        if not self._trusted:
            candidates = [self._without_untrusted_model(spec, problems) for spec in candidates]
            candidates = [self._without_own_servers(spec, problems) for spec in candidates]
        effective: dict[str, AgentSpec] = {}
        shadowed: list[AgentSpec] = []
        for spec in candidates:
            winner = effective.get(spec.name)
            if winner is None:
                effective[spec.name] = spec
                continue
            shadowed.append(spec)
            problems.append(
                AgentFileProblem(
                    spec.path or Path(spec.name),
                    name_lines.get(id(spec), 1),
                    "name",
                    f"agent {spec.name!r} is shadowed by {winner.path} ({winner.source}, {winner.ecosystem} "
                    "format), which takes precedence",
                    "warning",
                )
            )
        self._effective = effective | self._defined
        self._shadowed = sorted(shadowed, key=lambda spec: (spec.name, *_precedence(spec)))
        self._problems = sorted(problems, key=lambda problem: (str(problem.path), problem.line))

    def _without_untrusted_model(self, spec: AgentSpec, problems: list[AgentFileProblem]) -> AgentSpec:
        # A role or tier ("small", "powerful") names a model the user configured; only an explicit
        # "provider:model" chooses where the conversation goes.
        if spec.source != "project" or spec.model is None or ":" not in spec.model:
            return spec
        self._untrusted_models.append(spec)
        problems.append(
            AgentFileProblem(
                spec.path or Path(spec.name),
                1,
                "model",
                f"{spec.model!r} is ignored until you trust this folder (nestor trust); the agent runs "
                "on its parent's model",
                "warning",
            )
        )
        return replace(spec, model=None)

    def _without_own_servers(self, spec: AgentSpec, problems: list[AgentFileProblem]) -> AgentSpec:
        if spec.source != "project" or not spec.own_mcp_servers:
            return spec
        self._untrusted_servers.append(spec)
        names = ", ".join(name for name, _config in spec.own_mcp_servers)
        message = f"its MCP servers ({names}) are ignored until you trust this folder (nestor trust)"
        problems.append(AgentFileProblem(spec.path or Path(spec.name), 1, "", message, "warning"))
        return replace(spec, own_mcp_servers=())

    def _broken_definition(self, name: str) -> AgentFileProblem | None:
        for cached in self._files.values():
            if cached.result.spec is None and cached.context.default_name.lower() == name.lower():
                errors = [problem for problem in cached.result.problems if problem.severity == "error"]
                if errors:
                    return errors[0]
        return None


def _precedence(spec: AgentSpec) -> tuple[int, int, str]:
    return (_LEVEL_RANK[spec.source], ECOSYSTEMS.index(spec.ecosystem), str(spec.path))


def builtin_spec(name: str) -> AgentSpec:
    """The agent built into nestor called ``name`` (``coder-compact`` included), as shipped.

    The main agent is built from this, whatever the user's or the project's files define.
    """
    entry = resources.files(_BUILTIN_PACKAGE).joinpath(f"{name}.md")
    result = read_agent_text(
        ReadContext(Path(str(entry)), "builtin", "nestor", name), entry.read_text(encoding="utf-8")
    )
    if result.spec is None:  # a bug in a file nestor ships: the tests read every one
        raise RuntimeError(f"the built-in agent {name!r} cannot be read: {result.problems}")
    return result.spec


def _read_builtin() -> tuple[ReadResult, ...]:
    results: list[ReadResult] = []
    folder = resources.files(_BUILTIN_PACKAGE)
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        stem = entry.name.removesuffix(".md")
        if not entry.name.endswith(".md") or stem.endswith(_VARIANT_SUFFIX) or not entry.is_file():
            continue
        context = ReadContext(Path(str(entry)), "builtin", "nestor", stem)
        results.append(read_agent_text(context, entry.read_text(encoding="utf-8")))
    return tuple(results)


def _fingerprint(path: Path) -> _Fingerprint | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)


def _fingerprints(paths: tuple[Path, ...]) -> tuple[_Fingerprint | None, ...]:
    return tuple(_fingerprint(path) for path in paths)


def project_registry(project_root: Path, env: Mapping[str, str], *, trusted: bool = True) -> AgentRegistry:
    """The registry of a project for a user: ``HOME`` and the user config directory from ``env``."""
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return AgentRegistry(
        project_root, home=home, user_config_dir=default_user_config_path(env).parent, trusted=trusted
    )
