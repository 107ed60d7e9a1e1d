"""Which language servers a project gets: the ones detected on PATH and the ones ``[lsp.NAME]`` configures.

Resolving is cheap and never starts anything: a PATH lookup per known server and a few ``stat``
calls at the project root, so deciding whether a project has a server costs no time at start-up.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias

from nestor.config.sections import LspServerConfig

_PYTHON = ((".py", ".pyi"), ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile"))
_TYPESCRIPT = (
    (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"),
    ("package.json", "tsconfig.json", "jsconfig.json"),
)
_C = (
    (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"),
    ("compile_commands.json", "compile_flags.txt", ".clangd", "CMakeLists.txt"),
)


@dataclass(frozen=True, slots=True)
class KnownServer:
    """A language server nestor finds on PATH by itself.

    Attributes:
        name: Its name in ``[lsp.NAME]`` and ``nestor lsp list``.
        language: The language it serves; one server per language and project.
        command: The program looked up on PATH, and its arguments.
        extensions: The file extensions it serves.
        root_markers: Files at a project root that say the project is in its language.

    """

    name: str
    language: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    root_markers: tuple[str, ...]


KNOWN_SERVERS: tuple[KnownServer, ...] = (
    KnownServer("pyright", "python", ("pyright-langserver", "--stdio"), *_PYTHON),
    KnownServer("basedpyright", "python", ("basedpyright-langserver", "--stdio"), *_PYTHON),
    KnownServer("pylsp", "python", ("pylsp",), *_PYTHON),
    KnownServer("gopls", "go", ("gopls",), (".go",), ("go.mod", "go.work")),
    KnownServer("rust-analyzer", "rust", ("rust-analyzer",), (".rs",), ("Cargo.toml",)),
    KnownServer(
        "typescript-language-server", "typescript", ("typescript-language-server", "--stdio"), *_TYPESCRIPT
    ),
    KnownServer("clangd", "c", ("clangd",), *_C),
)
"""The servers detected on PATH, in order of preference within a language."""

LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".rs": "rust",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".c": "c",
    ".h": "c",
}
"""LSP language identifiers by extension; other C++ extensions are ``cpp``, the rest their extension."""

ServerState: TypeAlias = Literal[
    "available",
    "starting",
    "running",
    "restarting",
    "failed",
    "stopped",
    "not found",
    "disabled",
    "untrusted",
]
"""Where a server stands: found and not started yet, running, or why it will not run."""


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One language server as nestor runs it.

    Attributes:
        name: Its name (``pylsp``, a ``[lsp.NAME]`` table's ``NAME``).
        language: The language it serves (a configured server's is its name).
        command: The program (resolved on PATH when found) and its arguments.
        extensions: The file extensions it serves.
        root_markers: Files at the project root that give the project this server.
        env: Variables added to nestor's environment for it.
        init_options: Its ``initializationOptions``.
        diagnostics_timeout_s: How long edits wait for diagnostics.
        request_timeout_s: How long a start or a request may take.
        max_diagnostics: The most diagnostics appended to an edit's result.
        source: ``detected`` on PATH or ``configured`` by ``[lsp.NAME]``.
        state: ``available`` when it can run; otherwise why not.
        problem: One line on why it cannot run, when it cannot.

    """

    name: str
    language: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    root_markers: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    init_options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    diagnostics_timeout_s: float = 2.0
    request_timeout_s: float = 20.0
    max_diagnostics: int = 10
    source: Literal["detected", "configured"] = "detected"
    state: ServerState = "available"
    problem: str = ""

    def serves(self, path: Path) -> bool:
        """True when ``path``'s extension is one this server serves."""
        return path.suffix in self.extensions

    def applies_to(self, root: Path) -> bool:
        """True when the project at ``root`` is in its language (a marker, or such a file on top)."""
        if any((root / marker).exists() for marker in self.root_markers):
            return True
        for folder in (root, root / "src"):
            try:
                with os.scandir(folder) as entries:
                    if any(Path(entry.name).suffix in self.extensions for entry in entries):
                        return True
            except OSError:
                continue
        return False


def language_id(path: Path) -> str:
    """The LSP language identifier of ``path`` (``python``, ``cpp``, its extension otherwise)."""
    suffix = path.suffix
    if suffix in LANGUAGE_IDS:
        return LANGUAGE_IDS[suffix]
    return "cpp" if suffix in _C[0] else suffix.lstrip(".")


def resolve_servers(
    configured: Mapping[str, LspServerConfig], *, trusted: bool, env: Mapping[str, str]
) -> list[ServerSpec]:
    """Every known and configured server with its state; the runnable ones are ``available``.

    A configured server comes before a detected one of its language, and within a language only
    the first available server runs. In a folder that is not trusted no server runs: language
    servers read a project's configuration and may run its code (see SECURITY.md).
    """
    path = env.get("PATH", os.defpath)
    specs: list[ServerSpec] = []
    known = {server.name: server for server in KNOWN_SERVERS}
    for name, config in configured.items():
        if config.command is None and name not in known:
            names = ", ".join(known)
            problem = (
                f"[lsp.{name}] has no command and {name} is not a server nestor knows ({names}); "
                'add command = "..."'
            )
            specs.append(_spec(name, name, (), (), (), config, "configured", "failed", problem))
        elif config.command is not None:
            program = _which(config.command, path)
            command = (program or config.command, *(config.args or ()))
            like = known.get(name)  # a known server's program elsewhere keeps its other defaults
            extensions = config.extensions or (like.extensions if like else ())
            state: ServerState = "available" if program and extensions else "failed"
            problem = "" if program else f"[lsp.{name}]: {config.command} is not on PATH; fix command"
            if not extensions:
                problem = f'[lsp.{name}] has no extensions; add extensions = [".ext"]'
            language = language_id(Path(f"file{extensions[0]}")) if extensions else name
            markers = config.root_markers or (like.root_markers if like else ())
            specs.append(
                _spec(name, language, command, extensions, markers, config, "configured", state, problem)
            )
    for server in KNOWN_SERVERS:
        config = configured.get(server.name, LspServerConfig())
        if config.command is not None:
            continue
        program = _which(server.command[0], path)
        args = config.args if config.args is not None else server.command[1:]
        command = (program or server.command[0], *args)
        state = "available" if program else "not found"
        specs.append(
            _spec(
                server.name,
                server.language,
                command,
                config.extensions or server.extensions,
                config.root_markers if config.root_markers is not None else server.root_markers,
                config,
                "detected",
                state,
                "",
            )
        )
    return _one_per_language([_gated(spec, configured, trusted) for spec in specs])


def _spec(
    name: str,
    language: str,
    command: tuple[str, ...],
    extensions: tuple[str, ...],
    root_markers: tuple[str, ...],
    config: LspServerConfig,
    source: Literal["detected", "configured"],
    state: ServerState,
    problem: str,
) -> ServerSpec:
    return ServerSpec(
        name=name,
        language=language,
        command=command,
        extensions=extensions,
        root_markers=root_markers,
        env=dict(config.env),
        init_options=dict(config.init_options),
        diagnostics_timeout_s=float(config.diagnostics_timeout_s),
        request_timeout_s=float(config.request_timeout_s),
        max_diagnostics=config.max_diagnostics,
        source=source,
        state=state,
        problem=problem,
    )


def _gated(spec: ServerSpec, configured: Mapping[str, LspServerConfig], trusted: bool) -> ServerSpec:
    if spec.state != "available":
        return spec
    config = configured.get(spec.name)
    if config is not None and not config.enabled:
        return _with_state(spec, "disabled", f"[lsp.{spec.name}] enabled = false")
    if not trusted:
        return _with_state(spec, "untrusted", "this folder is not trusted; run `nestor trust` to use it")
    return spec


def _one_per_language(specs: list[ServerSpec]) -> list[ServerSpec]:
    taken: set[str] = set()
    chosen: list[ServerSpec] = []
    for spec in specs:
        if spec.state == "available" and spec.language in taken:
            spec = _with_state(spec, "disabled", f"another {spec.language} server runs instead")
        if spec.state == "available":
            taken.add(spec.language)
        chosen.append(spec)
    return chosen


def _with_state(spec: ServerSpec, state: ServerState, problem: str) -> ServerSpec:
    return replace(spec, state=state, problem=problem)


def _which(program: str, path: str) -> str | None:
    return shutil.which(program, path=path)
