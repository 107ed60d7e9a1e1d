from __future__ import annotations

import json

from nestor.testing.request_tokens import count_tokens, fixed_text, main_request, tool_definitions

TOOLS = [{"name": "read", "description": "Read a file.", "input_schema": {"type": "object"}}]


def test_characters_over_four_rounded_up() -> None:
    assert [count_tokens(text) for text in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]


def test_anthropic_system_blocks_and_tools_count_but_not_the_conversation() -> None:
    body = {
        "system": [{"type": "text", "text": "You are X."}, {"type": "text", "text": "Be brief."}],
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "a very long question " * 50}],
    }
    assert fixed_text(body) == "You are X.\nBe brief.\n" + json.dumps(TOOLS)


def test_chat_completions_system_and_developer_messages_count() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "You are X."},
            {"role": "developer", "content": [{"type": "text", "text": "Rules."}]},
            {"role": "user", "content": "hi"},
        ]
    }
    assert fixed_text(body) == "You are X.\nRules."


def test_responses_instructions_and_developer_items_count() -> None:
    body = {
        "instructions": "You are X.",
        "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ],
        "tools": TOOLS,
    }
    assert fixed_text(body) == "You are X.\nRules.\n" + json.dumps(TOOLS)


GEMINI_DECLARATIONS = [
    {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}},
    {"name": "glob", "description": "Find files.", "parameters": {"type": "object"}},
]


def test_gemini_system_instruction_and_function_declarations_count() -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "a very long question " * 50}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are X."}, {"text": "Rules."}]},
        "tools": [
            {"functionDeclarations": GEMINI_DECLARATIONS[:1]},
            {"functionDeclarations": GEMINI_DECLARATIONS[1:]},
        ],
        "generationConfig": {"temperature": 1},
    }
    assert fixed_text(body) == "You are X.\nRules.\n" + json.dumps(GEMINI_DECLARATIONS)
    assert tool_definitions(body) == GEMINI_DECLARATIONS


def test_a_gemini_built_in_tool_counts_as_one_tool() -> None:
    body = {"tools": [{"functionDeclarations": GEMINI_DECLARATIONS}, {"googleSearch": {}}]}
    assert tool_definitions(body) == [*GEMINI_DECLARATIONS, {"googleSearch": {}}]


def test_other_apis_tools_are_their_list_as_it_is() -> None:
    assert tool_definitions({"tools": TOOLS}) == TOOLS
    assert tool_definitions({"messages": []}) == []


def test_the_main_request_is_the_first_with_tools() -> None:
    title = {"messages": [{"role": "user", "content": "title this"}]}
    turn = {"messages": [], "tools": TOOLS}
    assert main_request([title, turn]) is turn
    assert main_request([title]) is title
    assert main_request([]) is None


def test_a_gemini_routing_request_is_not_the_main_request() -> None:
    routing = {"contents": [], "systemInstruction": {"parts": [{"text": "Score it."}]}}
    turn = {"contents": [], "tools": [{"functionDeclarations": GEMINI_DECLARATIONS}]}
    empty_group = {"contents": [], "tools": [{"functionDeclarations": []}]}
    assert main_request([routing, empty_group, turn]) is turn
