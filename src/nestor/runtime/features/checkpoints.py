"""The hook that snapshots the project around every agent's tool calls that can change files.

The factory gives every agent of a tree that can change files (the main agent, each sub-agent
that writes) a :class:`CheckpointHook` over the tree's one
:class:`~nestor.checkpoints.recorder.CheckpointRecorder`. A tool can change files when the
catalogue says it writes files (``write``, ``edit``), or says neither that it is read-only nor
that it delegates (``bash``, an MCP tool not marked read-only); a sub-agent's ``task`` call is not
one: the sub-agent's own calls are snapshotted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.checkpoints.recorder import CheckpointRecorder, ToolCall
from nestor.runtime.kernel.hooks import Hook, RunState
from nestor.tools.catalogue import ToolCatalogue

if TYPE_CHECKING:
    from nestor.runtime.kernel.setup import RunResult


def can_change_files(catalogue: ToolCatalogue, tool_name: str) -> bool:
    """Whether a call of ``tool_name`` may change the project's files (see the module's docstring)."""
    info = catalogue.get(tool_name)
    if info is None:
        return False
    return "writes_files" in info.traits or not info.traits & {"read_only", "delegation"}


class CheckpointHook(Hook):
    """Tells the tree's recorder when one agent's calls that can change files start and end.

    Args:
        recorder: The tree's recorder.
        catalogue: The tools' traits.
        project_root: The project the agent works in (paths the tools name are relative to it).

    """

    def __init__(self, recorder: CheckpointRecorder, catalogue: ToolCatalogue, project_root: Path) -> None:
        self._recorder = recorder
        self._catalogue = catalogue
        self._root = project_root.resolve()

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | None:
        """Snapshot first when this is the prompt's first change, and count the call as in flight."""
        if can_change_files(self._catalogue, call.tool_name):
            paths = self._paths(call) if self._catalogue.has(call.tool_name, "writes_files") else None
            await self._recorder.starting(ToolCall(state.agent_id, call.tool_call_id, call.tool_name, paths))
        return None

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Snapshot what the call changed."""
        await self._recorder.finished(call.tool_call_id)
        return result

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """Snapshot what calls stopped midway (a cancelled run) changed."""
        await self._recorder.abandoned(state.agent_id)

    def _paths(self, call: ToolCallPart) -> frozenset[str] | None:
        """The file a ``write``/``edit`` call names, relative to the project (none outside it)."""
        try:
            named = call.args_as_dict().get("path")
        except ValueError:
            return None
        if not isinstance(named, str) or not named:
            return None
        full = os.path.normpath(self._root / Path(named).expanduser())
        # The folder resolved (the project's is), not the file: a link keeps its own path.
        full = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
        relative = os.path.relpath(full, self._root)
        if relative == "." or relative.startswith(".." + os.sep) or relative == "..":
            return frozenset()
        return frozenset({Path(relative).as_posix()})
