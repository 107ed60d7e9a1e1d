"""The ``diagnostics`` tool: a file's errors and warnings, or every one the servers have reported."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from nestor.tools.base import ToolContext, ToolResult, WithheldFilter
from nestor.tools.lsp.results import Diagnostic, shown_problems
from nestor.tools.lsp.tool_base import MAX_PLACES, LspTool


class DiagnosticsParams(BaseModel):
    """Arguments of the ``diagnostics`` tool."""

    path: str = Field(
        default="",
        description="The file to check; empty for every problem the servers have reported in the project.",
    )


class DiagnosticsTool(LspTool[DiagnosticsParams]):
    """Reports compiler and linter problems from the project's language servers."""

    name = "diagnostics"
    params_model = DiagnosticsParams

    async def run(self, params: DiagnosticsParams, ctx: ToolContext) -> ToolResult:
        """One file's current diagnostics (synced from disk first), or every known one."""
        if params.path:
            path = ctx.resolve(params.path)
            found = {path: await self._lsp.file_diagnostics(path)}
        else:
            found = self._lsp.known_diagnostics()
        visible = WithheldFilter(self.name, ctx)
        found = {path: problems for path, problems in found.items() if visible(path)}
        content = render_diagnostics(found, ctx, visible)
        note = visible.note()
        return ToolResult(content=f"{content}\n{note}" if note else content, metadata={"files": len(found)})


def render_diagnostics(found: dict[Path, list[Diagnostic]], ctx: ToolContext, visible: WithheldFilter) -> str:
    """Errors first, then warnings, then the rest, as ``path:line:col: severity: message``, capped.

    A problem that names a file ``visible`` withholds (a type declared there, say) is left out,
    and the files' count in ``visible``'s note says so.
    """
    found = {path: shown_problems(items, visible) for path, items in found.items()}
    problems = sorted(
        ((problem, ctx.display_path(path)) for path, items in found.items() for problem in items),
        key=lambda entry: (entry[0].severity, entry[1], entry[0].line),
    )
    if not problems:
        where = "this file" if len(found) == 1 else "the files the servers have checked"
        return f"No problems reported in {where}."
    lines = [problem.render(shown_as) for problem, shown_as in problems[:MAX_PLACES]]
    if len(problems) > MAX_PLACES:
        lines.append(f"… {len(problems) - MAX_PLACES} more problems not shown.")
    return "\n".join(lines)
