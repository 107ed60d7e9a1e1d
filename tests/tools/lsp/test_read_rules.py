"""Every language-server answer passes the read rules: hover, definition, references, diagnostics.

A server reads the whole project, files a ``Read(...)`` deny rule covers included; what it says of
them (a docstring in a hover, a line in a definition, a type a problem quotes) must not reach the
model when ``view`` of the file would not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.permissions import PermissionPolicy
from nestor.tools.base import ToolContext
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.lsp.definition import DefinitionTool
from nestor.tools.lsp.diagnostics import DiagnosticsParams, DiagnosticsTool
from nestor.tools.lsp.hover import HoverTool
from nestor.tools.lsp.manager import LspManager
from nestor.tools.lsp.tool_base import SymbolAt
from nestor.tools.view import DiagnosingViewTool, ViewWithDiagnosticsParams
from tests.tools.lsp.test_failing_servers import READ_MESSAGE, script_server

pytestmark = pytest.mark.timeout(90)

CONF = 'def api_key():\n    """The key is hunter2-SECRET."""\n    return 1\n'
APP = "from private.conf import api_key\n\nprint(api_key())\n"

# A server whose every published problem points at private/conf.py in its related information (as
# TypeScript's does for the declaration of a type it quotes), beside one that points nowhere.
RELATED = (
    READ_MESSAGE
    + """
from pathlib import Path
conf = (Path.cwd() / "private" / "conf.py").as_uri()

def send(message):
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
    sys.stdout.buffer.flush()

def problem(line, message, related):
    span = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}}
    found = {"range": span, "severity": 1, "message": message}
    if related:
        found["relatedInformation"] = [
            {"location": {"uri": conf, "range": span}, "message": "declared here"}
        ]
    return found

while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        send({"id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method in ("shutdown",):
        send({"id": message["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        document = message["params"]["textDocument"]
        version = document["version"]  # in the messages: each version's problems are new ones
        problems = [
            problem(0, f"type 'hunter2-SECRET' expected (v{version})", True),
            problem(2, f"plain problem (v{version})", False),
        ]
        send({"method": "textDocument/publishDiagnostics", "params": {
            "uri": document["uri"], "version": version, "diagnostics": problems}})
"""
)


@pytest.fixture
def private_project(project: Path) -> Path:
    """The lsp fixtures' project with a ``private`` package that ``app.py`` imports from."""
    (project / "private").mkdir()
    (project / "private" / "__init__.py").write_text("", encoding="utf-8")
    (project / "private" / "conf.py").write_text(CONF, encoding="utf-8")
    (project / "app.py").write_text(APP, encoding="utf-8")
    return project


def denying_private(project: Path) -> ToolContext:
    """A tool context under ``deny = ["Read(private/**)"]``."""
    policy = PermissionPolicy.from_config([], [], ["Read(private/**)"], project_root=str(project))
    return ToolContext(project_root=project, withholds=policy.withholds)


async def test_hover_is_not_shown_for_a_symbol_defined_in_a_withheld_file(
    lsp: LspManager, private_project: Path
) -> None:
    ctx = denying_private(private_project)
    at = SymbolAt(path="app.py", line=3, symbol="api_key")

    hidden = await HoverTool(lsp).run(at, ctx)
    assert hidden.content == (
        "app.py:3: api_key: not shown: it is defined in a file the permission rules withhold."
    )
    # The same hover with no rule shows the docstring: the rule is what hides it.
    shown = await HoverTool(lsp).run(at, ToolContext(project_root=private_project))
    assert "hunter2-SECRET" in shown.content
    # A symbol defined in a file the rules leave alone is shown as ever, under the same rule.
    helper = await HoverTool(lsp).run(SymbolAt(path="uses.py", line=3, symbol="helper"), ctx)
    assert "helper(x)" in helper.content
    definition = await DefinitionTool(lsp).run(at, ctx)
    assert definition.content == "No definition found.\n(1 file left out by the permission rules.)"


async def test_a_definition_through_a_link_is_judged_where_it_leads(
    lsp: LspManager, private_project: Path
) -> None:
    (private_project / "public").mkdir()
    (private_project / "public" / "conf.py").symlink_to(private_project / "private" / "conf.py")
    (private_project / "app.py").write_text(APP.replace("private.conf", "public.conf"), encoding="utf-8")
    ctx = denying_private(private_project)
    at = SymbolAt(path="app.py", line=3, symbol="api_key")

    definition = await DefinitionTool(lsp).run(at, ctx)
    hover = await HoverTool(lsp).run(at, ctx)

    assert "def api_key" not in definition.content and "1 file left out" in definition.content
    assert "hunter2-SECRET" not in hover.content


async def test_problems_naming_a_withheld_file_are_left_out(tmp_path: Path, private_project: Path) -> None:
    manager, _runs = script_server(tmp_path, private_project, RELATED)
    ctx = denying_private(private_project)
    try:
        checked = await DiagnosticsTool(manager).run(DiagnosticsParams(path="app.py"), ctx)
        viewed = await DiagnosingViewTool(manager).run(
            ViewWithDiagnosticsParams(path="app.py", diagnostics=True), ctx
        )
        edited = await EditTool(manager).run(
            EditParams(path="app.py", old_string="print(", new_string="print(1, "), ctx
        )
        everything = await DiagnosticsTool(manager).run(DiagnosticsParams(), ToolContext(private_project))
    finally:
        await manager.close()
    for answer in (checked.content, viewed.content, edited.content):
        assert "plain problem" in answer
        assert "hunter2-SECRET" not in answer
    note = "(1 file left out by the permission rules.)"
    assert checked.content == f"app.py:3:1: error: plain problem (v1)\n{note}"
    assert "type 'hunter2-SECRET' expected" in everything.content  # no rule, nothing withheld
