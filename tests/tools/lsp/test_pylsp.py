"""The language-server tools against a real server: pylsp (with pyflakes), found on PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.tools.base import ToolContext
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.lsp.definition import DefinitionTool
from nestor.tools.lsp.diagnostics import DiagnosticsParams, DiagnosticsTool
from nestor.tools.lsp.hover import HoverTool
from nestor.tools.lsp.manager import LspManager
from nestor.tools.lsp.references import ReferencesTool
from nestor.tools.lsp.symbols import SymbolsParams, SymbolsTool
from nestor.tools.lsp.tool_base import SymbolAt
from nestor.tools.view import DiagnosingViewTool, ViewWithDiagnosticsParams
from nestor.tools.write import WriteParams, WriteTool

pytestmark = pytest.mark.timeout(90)


async def test_an_edit_that_introduces_an_undefined_name_returns_its_diagnostic(
    lsp: LspManager, ctx: ToolContext, project: Path
) -> None:
    assert lsp.available()
    edit = EditTool(lsp)
    result = await edit.run(
        EditParams(path="uses.py", old_string="value = helper(3)", new_string="value = helpr(3)"), ctx
    )
    assert result.content.startswith("Edited uses.py: 1 replacement.")
    # The import is unused now too: both problems are the edit's.
    assert result.content.endswith(
        "pylsp reports 2 new problems in uses.py:\n"
        "uses.py:1:1: warning: 'helpers.helper' imported but unused (pyflakes)\n"
        "uses.py:3:9: error: undefined name 'helpr' (pyflakes)"
    )
    assert "'helpr'" in result.metadata["diagnostics"]
    # Fixed: nothing new to report, and the result is the edit's alone.
    fixed = await edit.run(EditParams(path="uses.py", old_string="helpr(3)", new_string="helper(3)"), ctx)
    assert "pylsp" not in fixed.content
    # A problem already there is not reported again by a later, unrelated change.
    broken = await edit.run(
        EditParams(path="uses.py", old_string="helper(3)", new_string="helper(missing)"), ctx
    )
    assert "undefined name 'missing'" in broken.content
    later = await edit.run(EditParams(path="uses.py", old_string="value =", new_string="result ="), ctx)
    assert "pylsp" not in later.content


async def test_write_reports_the_new_problems_of_the_file_it_wrote(lsp: LspManager, ctx: ToolContext) -> None:
    result = await WriteTool(lsp).run(WriteParams(path="fresh.py", content="print(nowhere)\n"), ctx)
    assert "fresh.py:1:7: error: undefined name 'nowhere' (pyflakes)" in result.content


async def test_definition_references_hover_and_symbols(lsp: LspManager, ctx: ToolContext) -> None:
    definition = await DefinitionTool(lsp).run(SymbolAt(path="uses.py", line=3, symbol="helper"), ctx)
    assert definition.content == "helpers.py:1: def helper(x):"
    references = await ReferencesTool(lsp).run(SymbolAt(path="helpers.py", line=1, symbol="helper"), ctx)
    assert references.content.splitlines() == [
        "helpers.py:1: def helper(x):",
        "helpers.py:5: print(helper(2))",
        "uses.py:1: from helpers import helper",
        "uses.py:3: value = helper(3)",
    ]
    hover = await HoverTool(lsp).run(SymbolAt(path="helpers.py", line=5, symbol="helper"), ctx)
    assert hover.content.startswith("helpers.py:5: helper\n")
    assert "helper(x)" in hover.content
    symbols = await SymbolsTool(lsp).run(SymbolsParams(path="helpers.py"), ctx)
    assert symbols.content == "helpers.py:1: function helper"
    # The query matches names, not kinds.
    named = await SymbolsTool(lsp).run(SymbolsParams(path="helpers.py", query="HELP"), ctx)
    assert named.content == "helpers.py:1: function helper"
    kinds = await SymbolsTool(lsp).run(SymbolsParams(path="helpers.py", query="function"), ctx)
    assert kinds.content == "No symbols found."


async def test_a_symbol_not_on_the_line_is_a_clear_error(lsp: LspManager, ctx: ToolContext) -> None:
    with pytest.raises(
        Exception, match=r"'nothing' is not on line 3 of uses.py, which reads: 'value = helper\(3\)'"
    ):
        await DefinitionTool(lsp).run(SymbolAt(path="uses.py", line=3, symbol="nothing"), ctx)


async def test_workspace_symbols_say_when_the_server_cannot_search_them(
    lsp: LspManager, ctx: ToolContext
) -> None:
    with pytest.raises(Exception, match="pylsp does not support workspace/symbol"):
        await SymbolsTool(lsp).run(SymbolsParams(query="helper"), ctx)


async def test_diagnostics_of_a_file_changed_outside_nestor_and_of_the_project(
    lsp: LspManager, ctx: ToolContext, project: Path
) -> None:
    (project / "uses.py").write_text("value = unknown_thing\n", encoding="utf-8")  # as bash would
    tool = DiagnosticsTool(lsp)
    one = await tool.run(DiagnosticsParams(path="uses.py"), ctx)
    assert one.content == "uses.py:1:9: error: undefined name 'unknown_thing' (pyflakes)"
    everything = await tool.run(DiagnosticsParams(), ctx)
    assert everything.content == one.content
    viewed = await DiagnosingViewTool(lsp).run(
        ViewWithDiagnosticsParams(path="uses.py", diagnostics=True), ctx
    )
    assert viewed.content.endswith(
        "Diagnostics:\nuses.py:1:9: error: undefined name 'unknown_thing' (pyflakes)"
    )


async def test_a_file_no_server_serves_gets_no_diagnostics_and_no_wait(
    lsp: LspManager, ctx: ToolContext
) -> None:
    result = await WriteTool(lsp).run(WriteParams(path="notes.txt", content="hello\n"), ctx)
    assert result.content == "Created notes.txt (6 bytes, 1 lines)."
    assert lsp.statuses()[2].state == "available"  # pylsp never started
    with pytest.raises(Exception, match="no language server for txt files here"):
        await DefinitionTool(lsp).run(SymbolAt(path="notes.txt", line=1), ctx)
