"""What a tool is, and what it gets to do its job.

A tool is a class with a ``name``, a pydantic ``Params`` model (its JSON schema is what the model
sees, and validation errors go back to the model as a retry), a description kept in ``<name>.md``
beside its module, and an async ``run``. Before ``run``, the runtime asks the tool which
permission the call needs (:meth:`Tool.permission`) and settles it against the rules; tools never
decide permissions themselves.

Every read and write goes through the rules, so a deny rule holds inside the project too; the rules
allow reading inside the project by default. Only reading the session's scratch directory (where
the runtime saves large tool results for the model to read back) skips them. Files a tool finds on
its own (grep's matches, glob's hits) are checked one by one and left out when a rule withholds them.
"""

from __future__ import annotations

import copy
import functools
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from nestor.core.errors import ToolError
from nestor.core.events import Event
from nestor.core.permission import PermissionAction, PermissionRequest


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: text for the model, whether it is an error, and data for the UI/store."""

    content: str
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


async def _deny_all(_request: PermissionRequest) -> bool:
    return False


def _withhold_nothing(_request: PermissionRequest) -> bool:
    return False


def _may_withhold_anything(_tool_name: str) -> bool:
    return True


def _drop_event(_event: Event) -> None:
    return None


@dataclass(slots=True)
class ToolContext:
    """Everything a tool call may use besides its arguments (one context per call).

    A path is resolved once per call (:meth:`resolve`): the permission judges that real path, and
    the tool then opens that same path without following links (:mod:`nestor.core.files`), so a
    command that swaps a link in between makes the call fail rather than land elsewhere.

    Attributes:
        project_root: The project's root; relative paths resolve against it.
        session_id: The session (and agent) the call belongs to.
        tool_call_id: The model's id for this call.
        emit: Publishes an event (progress of a long-running tool, for instance).
        ask_permission: Asks for a permission a tool discovers only while running; returns True
            when granted. Permissions known up front go through :meth:`Tool.permission` instead.
        scratch_dir: This session's directory for temporary files (large tool results, ...), if
            any; reading inside it needs no permission, writing follows the usual rules.
        withholds: True when the rules keep a request from going ahead unasked (a deny or ask
            rule); tools leave such files out of what they find, rather than ask about each.
        may_withhold: False when no rule could withhold a file from a tool of that name, so a
            search for withheld files can be skipped; True (search) unless the rules say otherwise.

    """

    project_root: Path
    session_id: str = ""
    tool_call_id: str = ""
    emit: Callable[[Event], None] = _drop_event
    ask_permission: Callable[[PermissionRequest], Awaitable[bool]] = _deny_all
    scratch_dir: Path | None = None
    withholds: Callable[[PermissionRequest], bool] = _withhold_nothing
    may_withhold: Callable[[str], bool] = _may_withhold_anything
    _real_root: tuple[Path, Path, str] | None = field(default=None, init=False, repr=False, compare=False)
    _resolved: dict[str, Path] = field(default_factory=dict[str, Path], init=False, repr=False, compare=False)

    def real_root(self) -> Path:
        """The project root with symlinks resolved (worked out once: grep asks for every file found)."""
        return self._root_and_prefix()[0]

    def _root_and_prefix(self) -> tuple[Path, str]:
        cached = self._real_root
        if cached is None or cached[0] is not self.project_root:
            real = self.project_root.resolve()
            text = str(real)
            cached = self._real_root = (self.project_root, real, text if text.endswith("/") else f"{text}/")
        return cached[1], cached[2]

    def resolve(self, path: str) -> Path:
        """Resolve ``path`` (absolute, ``~``-relative or project-relative) to a real, absolute path.

        The first answer for a path is kept for the rest of the call: what the permission judged
        is what the tool opens, whatever links change meanwhile.
        """
        known = self._resolved.get(path)
        if known is None:
            candidate = Path(path).expanduser()
            if not candidate.is_absolute():
                candidate = self.project_root / candidate
            known = self._resolved[path] = candidate.resolve()
        return known

    def is_inside_project(self, path: Path) -> bool:
        """Return True when the resolved ``path`` lies within the project root."""
        return self._inside(path) is not None

    def _inside(self, path: Path) -> str | None:
        # Path.relative_to, as string operations: grep asks this twice per file it found.
        prefix = self._root_and_prefix()[1]
        text = str(path)
        if text == prefix or text == prefix[:-1]:
            return "."
        return text[len(prefix) :] if text.startswith(prefix) else None

    def is_inside_scratch(self, path: Path) -> bool:
        """Return True when the resolved ``path`` lies within the scratch directory (False without one)."""
        return self.scratch_dir is not None and path.is_relative_to(self.scratch_dir.resolve())

    def display_path(self, path: Path) -> str:
        """Return ``path`` relative to the project root when inside it, else absolute."""
        inside = self._inside(path)
        return str(path) if inside is None else inside


ParamsT = TypeVar("ParamsT", bound=BaseModel)


class Tool(ABC, Generic[ParamsT]):
    """Base class of every tool.

    Subclasses set ``name`` and ``params_model`` (what a tool is, read-only for instance, is its
    entry in :mod:`nestor.tools.catalogue`), put their description in
    ``<module>.md`` beside their module (or override :attr:`description`), and implement
    :meth:`run`; tools that touch paths, commands or the network override :meth:`permission`.
    """

    name: ClassVar[str]
    params_model: ClassVar[type[BaseModel]]
    brief_parameters: ClassVar[tuple[str, ...]] = ()
    """Optional parameters a small model still sees (it sees the required ones and these)."""

    @property
    def description(self) -> str:
        """The model-facing description, read from the ``.md`` file beside the tool's module."""
        module = type(self).__module__
        package, _, stem = module.rpartition(".")
        return resources.files(package).joinpath(f"{stem}.md").read_text(encoding="utf-8").strip()

    @property
    def brief_description(self) -> str:
        """The first paragraph of the description on one line, for small models."""
        first = self.description.split("\n\n", 1)[0]
        return " ".join(first.split())

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the parameters, as sent to the model (a fresh copy each time)."""
        return copy.deepcopy(_schema_of(self.params_model))

    def permission(self, params: ParamsT, ctx: ToolContext) -> PermissionRequest | None:
        """Return the permission this call needs, or None when it needs none.

        The default suits read-only tools over one path: a ``read`` request (none inside the scratch
        directory). Tools with a ``path`` parameter get this for free.
        """
        raw_path = getattr(params, "path", None)
        if not isinstance(raw_path, str):
            return None
        return path_permission(self.name, "read", raw_path, ctx)

    @abstractmethod
    async def run(self, params: ParamsT, ctx: ToolContext) -> ToolResult | str:
        """Do the work. Raise :class:`ToolError` for a clear error message to the model."""


@functools.cache
def _schema_of(params_model: type[BaseModel]) -> dict[str, Any]:
    """A params model's JSON schema, built once.

    pydantic takes milliseconds per schema, and every new agent (twenty sub-agents at once) asks
    for its tools' schemas.
    """
    return params_model.model_json_schema()


def build_loaded_schemas() -> None:
    """Build the schemas of every tool class imported so far (the warm process does, once)."""
    classes: list[type[Tool[Any]]] = list(Tool.__subclasses__())
    while classes:
        tool_class = classes.pop()
        classes.extend(tool_class.__subclasses__())
        params_model = getattr(tool_class, "params_model", None)
        if isinstance(params_model, type) and issubclass(params_model, BaseModel):
            _schema_of(params_model)


def clamp_timeout(requested: int, maximum: int, notes: list[str]) -> int:
    """Return ``requested`` capped at ``maximum``, adding a note for the model when it was capped."""
    if requested <= maximum:
        return requested
    notes.append(f"Note: timeout {requested} s was clamped to the maximum of {maximum} s.")
    return maximum


def path_permission(
    tool_name: str, action: PermissionAction, raw_path: str | Path, ctx: ToolContext
) -> PermissionRequest | None:
    """Build the permission request of a file tool on ``raw_path``, or None when it needs none.

    Only reads inside the session's scratch directory need none: reads inside the project are
    requests too (the rules allow them by default, and deny rules must hold there). The path is
    resolved first, so a symlink that points elsewhere is judged by where it points; a
    :class:`~pathlib.Path` is taken as already resolved (a file a search found under a resolved
    directory without following links).
    """
    path = raw_path if isinstance(raw_path, Path) else ctx.resolve(raw_path)
    outside = not ctx.is_inside_project(path)
    if action == "read" and outside and ctx.is_inside_scratch(path):
        return None
    verb = "Read" if action == "read" else "Write"
    return PermissionRequest(
        tool_name=tool_name,
        action=action,
        target=str(path),
        description=f"{verb} {ctx.display_path(path)}",
        outside_project=outside,
        grant_key=str(path.parent) if outside else "*",
        target_is_real=True,
    )


class WithheldFilter:
    """Tells which files a read tool found may be shown, counting the ones the rules withhold.

    Each file is judged once, as a read by ``tool_name``: ``deny view(.env)`` keeps ``.env`` and its
    lines out of grep's and glob's results. The paths are the real ones a search found (under a
    resolved directory, links not followed), so they are not resolved again: thousands of files
    each cost a ``realpath`` otherwise.
    """

    def __init__(self, tool_name: str, ctx: ToolContext) -> None:
        self._tool_name = tool_name
        self._ctx = ctx
        self._seen: dict[Path, bool] = {}

    def __call__(self, path: Path) -> bool:
        """True when ``path`` may be shown."""
        shown = self._seen.get(path)
        if shown is None:
            request = path_permission(self._tool_name, "read", path, self._ctx)
            shown = request is None or not self._ctx.withholds(request)
            self._seen[path] = shown
        return shown

    def apart(self) -> WithheldFilter:
        """A filter judging by the same rules whose verdicts this one's :meth:`note` does not count."""
        return WithheldFilter(self._tool_name, self._ctx)

    def may_withhold(self) -> bool:
        """False when the rules withhold no file at all from this tool (no search for one is needed)."""
        return self._ctx.may_withhold(self._tool_name)

    @property
    def withheld(self) -> int:
        """How many files were left out."""
        return sum(not shown for shown in self._seen.values())

    def note(self) -> str:
        """A line for the model when files were left out, else ""."""
        count = self.withheld
        if not count:
            return ""
        return f"({count} {'file' if count == 1 else 'files'} left out by the permission rules.)"


__all__ = [
    "PermissionAction",
    "PermissionRequest",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "WithheldFilter",
    "clamp_timeout",
    "path_permission",
]
