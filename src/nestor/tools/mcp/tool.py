"""One tool of an MCP server, as a nestor tool: ``mcp__<server>__<tool>``.

Its description and JSON schema are the server's, passed through; the server validates the
arguments. Every call asks permission by default (an ``execute`` request the rules match by the
tool's name: ``mcp__github__*``); the server's ``readOnlyHint`` only makes it a read-only tool in
the catalogue, which is what lets a read-only agent have it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from nestor.core.permission import PermissionRequest
from nestor.tools.base import Tool, ToolContext, ToolResult
from nestor.tools.mcp.results import to_tool_result

if TYPE_CHECKING:
    from nestor.tools.mcp.connection import McpConnection

_ARGUMENTS_SHOWN = 200  # characters of the arguments in a permission question


class McpArguments(BaseModel):
    """Any JSON object: the server checks the arguments against its own schema."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class McpToolDefinition:
    """What a server says about one of its tools.

    Attributes:
        server: The server's name.
        tool: The tool's name on the server.
        name: Its name in nestor (``mcp__server__tool``).
        description: The server's description.
        input_schema: The server's JSON schema of its arguments.
        read_only: The server's ``readOnlyHint``.

    """

    server: str
    tool: str
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


class McpTool(Tool[McpArguments]):
    """A tool of an MCP server, called through its connection."""

    params_model = McpArguments

    def __init__(self, definition: McpToolDefinition, connection: McpConnection) -> None:
        self.definition = definition
        self.connection = connection
        self.name = definition.name  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def description(self) -> str:
        """The server's description of the tool."""
        text = self.definition.description.strip()
        return text or f"The {self.definition.tool} tool of the MCP server {self.definition.server}."

    def parameters_schema(self) -> dict[str, Any]:
        """The server's JSON schema of the arguments (an object schema, a fresh copy)."""
        schema = copy.deepcopy(self.definition.input_schema) or {}
        schema.setdefault("type", "object")
        if schema.get("type") == "object":
            schema.setdefault("properties", {})
        return schema

    def permission(self, params: McpArguments, ctx: ToolContext) -> PermissionRequest | None:
        """Every call asks unless a rule allows it: what a server does is the server's."""
        arguments = json.dumps(params.model_extra or {}, ensure_ascii=False)
        if len(arguments) > _ARGUMENTS_SHOWN:
            arguments = arguments[: _ARGUMENTS_SHOWN - 1] + "…"
        definition = self.definition
        return PermissionRequest(
            tool_name=self.name,
            action="execute",
            target=self.name,
            description=f"MCP {definition.server}: {definition.tool} {arguments}",
        )

    async def run(self, params: McpArguments, ctx: ToolContext) -> ToolResult:
        """Call the tool on its server."""
        definition = self.definition
        result = await self.connection.call(definition.tool, params.model_extra or {})
        return to_tool_result(result, ctx.scratch_dir, server=definition.server, tool=definition.tool)
