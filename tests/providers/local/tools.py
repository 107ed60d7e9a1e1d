"""Tool definitions and the Qwen chat template shared by the local provider's tests."""

from __future__ import annotations

from pydantic_ai.tools import ToolDefinition

from tests.providers.local.gguf_writer import qwen_chat_template

QWEN_TEMPLATE = qwen_chat_template()

GREP = ToolDefinition(
    name="grep",
    description="Search files.",
    parameters_json_schema={
        "type": "object",
        "properties": {"pattern": {"type": "string"}},
        "required": ["pattern"],
    },
)
VIEW = ToolDefinition(
    name="view",
    description="Show a file.",
    parameters_json_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
)
TOOLS = {"grep", "view"}
