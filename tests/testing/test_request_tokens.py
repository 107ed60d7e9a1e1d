from __future__ import annotations

import json

from nestor.testing.request_tokens import count_tokens, fixed_text, main_request

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


def test_the_main_request_is_the_first_with_tools() -> None:
    title = {"messages": [{"role": "user", "content": "title this"}]}
    turn = {"messages": [], "tools": TOOLS}
    assert main_request([title, turn]) is turn
    assert main_request([title]) is title
    assert main_request([]) is None
