"""What a sub-agent hands back, end to end: the files it explored include those its searches named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelRequest, ToolReturnPart

from nestor.testing import ScriptedModel, call, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness


def task_result(history: list[Any]) -> dict[str, Any]:
    [part] = [
        part
        for message in history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    ]
    return part.metadata["subagent"]


async def test_an_agent_that_only_searches_reports_the_files_its_results_named(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "parser.py").write_text("def parse():\n    return TOKEN\n", encoding="utf-8")
    (tmp_path / "src" / "lexer.py").write_text("TOKEN = 1\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("nothing here\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("notes\n", encoding="utf-8")
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", {"description": "find", "prompt": "CHILD: find TOKEN"}), reply("ok")],
                "CHILD": [
                    call("grep", {"pattern": "TOKEN"}) + call("glob", {"pattern": "*.md"}),
                    reply("TOKEN is in src/lexer.py and src/parser.py"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    await main.run("USER: go")

    explored = task_result(main.history)["files_explored"]
    assert sorted(explored) == ["README.md", "notes.md", "src/lexer.py", "src/parser.py"]
