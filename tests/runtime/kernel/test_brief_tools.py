"""Brief tool definitions (``AgentSetup.brief_tools``): what a small local model is shown of each tool."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai.tools import ToolDefinition

from nestor.runtime.factory.toolset import compact_coder_tools
from nestor.testing import ScriptedModel, call, reply
from nestor.tools.base import Tool, ToolContext
from tests.runtime.support import Harness, tool_results

DESCRIPTION = """Write a note
into the notebook.

Notes are kept in order; a note with the same title replaces the old one.

- Keep notes short."""


class Scope(BaseModel):
    """Where a note belongs."""

    project: str
    tags: list[str] = Field(default_factory=list[str])


class NoteParams(BaseModel):
    """Arguments of the note tool."""

    title: str = Field(description="The note's title.")
    body: str
    scope: Scope
    pinned: bool = False
    colour: str | None = Field(default=None, description="A colour name.")


class NoteTool(Tool[NoteParams]):
    name = "note"
    params_model = NoteParams
    read_only = True

    @property
    def description(self) -> str:
        return DESCRIPTION

    async def run(self, params: NoteParams, ctx: ToolContext) -> str:
        return f"noted {params.title!r} pinned={params.pinned} colour={params.colour}"


def title_keys(schema: Any) -> list[str]:
    """Every place a string ``title`` (pydantic's, not a property called title) sits in ``schema``."""
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
                if key == "title" and isinstance(value, str):
                    found.append(where)
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, item in enumerate(node):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                walk(item, f"{where}/{index}")

    walk(schema, "")
    return found


async def offered_tools(harness: Harness, tools: list[Tool[Any]], *, brief: bool) -> list[ToolDefinition]:
    model = ScriptedModel([reply("done")])
    await harness.agent(model, tools, brief_tools=brief).run("hi")
    return list(model.requests[0].info.function_tools)


async def test_brief_tools_get_one_paragraph_and_only_required_parameters(harness: Harness) -> None:
    [definition] = await offered_tools(harness, [NoteTool()], brief=True)

    assert definition.name == "note"
    assert definition.description == "Write a note into the notebook."
    schema = definition.parameters_json_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["title", "body", "scope"]
    assert list(schema["properties"]) == ["title", "body", "scope"]
    # A parameter called "title" stays; pydantic's title strings go, nested definitions included.
    assert schema["properties"]["title"] == {"description": "The note's title.", "type": "string"}
    assert schema["properties"]["body"] == {"type": "string"}
    assert "description" not in schema  # the params model's docstring
    assert title_keys(schema) == []
    assert "project" in schema["$defs"]["Scope"]["properties"]


async def test_without_brief_tools_the_model_sees_everything(harness: Harness) -> None:
    [definition] = await offered_tools(harness, [NoteTool()], brief=False)

    assert definition.description == DESCRIPTION
    schema = definition.parameters_json_schema
    # Everything but the params model's docstring, which the tool's description says better.
    expected = NoteParams.model_json_schema()
    assert expected.pop("description")
    assert schema == expected
    assert list(schema["properties"]) == ["title", "body", "scope", "pinned", "colour"]
    assert schema["properties"]["title"]["title"] == "Title"


async def test_brief_tools_still_accept_the_parameters_left_out(harness: Harness) -> None:
    scope = {"project": "nestor"}
    model = ScriptedModel(
        [
            call("note", {"title": "a", "body": "b", "scope": scope}),
            call("note", {"title": "c", "body": "d", "scope": scope, "pinned": True, "colour": "red"}),
            reply("done"),
        ]
    )
    agent = harness.agent(model, [NoteTool()], brief_tools=True)

    await agent.run("take notes")

    stored = harness.messages.list(agent.session_id)
    results = [part.content for message in (stored[2], stored[4]) for part in tool_results(message)]
    assert results == ["noted 'a' pinned=False colour=None", "noted 'c' pinned=True colour=red"]


async def test_the_compact_coder_tools_described_briefly(harness: Harness) -> None:
    tools = compact_coder_tools()

    brief = await offered_tools(harness, tools, brief=True)
    full = await offered_tools(harness, tools, brief=False)

    assert [d.name for d in brief] == [d.name for d in full] == ["view", "ls", "glob", "grep", "edit", "bash"]
    for short, long in zip(brief, full, strict=True):
        assert short.description and long.description and "\n" not in short.description
        assert " ".join(long.description.split()).startswith(short.description)
        schema = short.parameters_json_schema
        assert title_keys(schema) == []
        assert set(schema["properties"]) == set(schema.get("required", []))
        assert set(schema["properties"]) <= set(long.parameters_json_schema["properties"])
    required = {d.name: sorted(d.parameters_json_schema["properties"]) for d in brief}
    assert required["ls"] == []  # lists the project root by default
    assert required["grep"] == ["pattern"] and "path" in required["view"]
    assert len(json.dumps([d.parameters_json_schema for d in brief])) < len(
        json.dumps([d.parameters_json_schema for d in full])
    )


class PinnedNoteTool(NoteTool):
    brief_parameters = ("pinned",)


async def test_a_tool_keeps_the_optional_parameters_it_names_for_small_models(harness: Harness) -> None:
    [definition] = await offered_tools(harness, [PinnedNoteTool()], brief=True)

    schema = definition.parameters_json_schema
    assert list(schema["properties"]) == ["title", "body", "scope", "pinned"]
    assert schema["required"] == ["title", "body", "scope"]  # still optional: the model may leave it out
