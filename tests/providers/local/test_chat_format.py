from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.core.errors import ProviderError
from nestor.providers.local.chat_format import ChatTemplate, to_chat_messages, tools_for_template
from tests.providers.local.tools import GREP, QWEN_TEMPLATE

TOOLS_BLOCK = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "grep", "description": "Search files.", "parameters": '
    '{"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}}\n'
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call><|im_end|>\n'
)


def qwen() -> ChatTemplate:
    return ChatTemplate(QWEN_TEMPLATE, bos_token="", eos_token="<|im_end|>")


def call(name: str, args: Any, call_id: str) -> ToolCallPart:
    return ToolCallPart(name, args, tool_call_id=call_id)


def tool_call_dict(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"type": "function", "id": call_id, "function": {"name": name, "arguments": arguments}}


# -- to_chat_messages ------------------------------------------------------------------------------


def test_instructions_and_leading_system_prompts_fold_into_one_system_message() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("first"), SystemPromptPart("second"), UserPromptPart("hi")])
    ]
    assert to_chat_messages(history, "be brief") == [
        {"role": "system", "content": "be brief\n\nfirst\n\nsecond"},
        {"role": "user", "content": "hi"},
    ]
    assert to_chat_messages(history, None)[0] == {"role": "system", "content": "first\n\nsecond"}
    assert to_chat_messages([ModelRequest(parts=[UserPromptPart("hi")])], None) == [
        {"role": "user", "content": "hi"}
    ]


def test_a_later_system_prompt_becomes_a_user_message() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("hi")]),
        ModelResponse(parts=[TextPart("hello")]),
        ModelRequest(parts=[SystemPromptPart("<system-reminder>todo</system-reminder>")]),
    ]
    assert to_chat_messages(history, "sys") == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "<system-reminder>todo</system-reminder>"},
    ]


def test_adjacent_user_texts_merge_in_order() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("one"), UserPromptPart("two")]),
        ModelRequest(parts=[SystemPromptPart("reminder")]),
    ]
    assert to_chat_messages(history, None) == [{"role": "user", "content": "one\n\ntwo\n\nreminder"}]


def test_user_prompt_items_keep_text_and_replace_files() -> None:
    content = [
        "look at this",
        BinaryContent(b"\x89PNG", media_type="image/png"),
        BinaryContent(b"notes inline", media_type="text/plain"),
        CachePoint(),
        BinaryContent(b"%PDF", media_type="application/pdf"),
    ]
    messages = to_chat_messages([ModelRequest(parts=[UserPromptPart(content)])], None)
    assert messages == [
        {
            "role": "user",
            "content": "look at this\n[image omitted: the local model reads text only]\nnotes inline\n"
            "[document omitted: the local model reads text only]",
        }
    ]


def test_assistant_text_joined_thinking_dropped_calls_as_dicts() -> None:
    response = ModelResponse(
        parts=[
            ThinkingPart("secret plan"),
            TextPart("Let me look."),
            TextPart("Twice."),
            call("grep", '{"pattern": "x"}', "c1"),
            call("view", {"path": "a.py"}, "c2"),
            call("grep", None, "c3"),
            call("grep", '{"pattern": ', "c4"),
        ]
    )
    assert to_chat_messages([response], None) == [
        {
            "role": "assistant",
            "content": "Let me look.\n\nTwice.",
            "tool_calls": [
                tool_call_dict("grep", {"pattern": "x"}, "c1"),
                tool_call_dict("view", {"path": "a.py"}, "c2"),
                tool_call_dict("grep", {}, "c3"),
                tool_call_dict("grep", {"INVALID_JSON": '{"pattern": '}, "c4"),
            ],
        }
    ]


def test_a_response_of_thinking_only_adds_no_message() -> None:
    history: list[ModelMessage] = [ModelResponse(parts=[ThinkingPart("hmm")])]
    assert to_chat_messages(history, None) == []


def test_tool_returns_become_tool_messages() -> None:
    ok = ToolReturnPart("grep", {"matches": ["a.py:1"]}, tool_call_id="c1")
    failed = ToolReturnPart("view", "no such file", tool_call_id="c2", outcome="failed")
    messages = to_chat_messages([ModelRequest(parts=[ok, failed, UserPromptPart("and?")])], None)
    assert messages == [
        {"role": "tool", "content": ok.model_response_str(), "tool_call_id": "c1", "name": "grep"},
        {"role": "tool", "content": failed.model_response_str(), "tool_call_id": "c2", "name": "view"},
        {"role": "user", "content": "and?"},
    ]
    assert messages[0]["content"] == '{"matches":["a.py:1"]}'


def test_retry_prompts_answer_their_call_or_speak_as_user() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RetryPromptPart is deprecated, yet old histories hold it
        bound = RetryPromptPart("bad pattern", tool_name="grep", tool_call_id="c1")
        loose = RetryPromptPart("say it plainly")
    feedback = RetryFeedbackPart("not valid", retry=RetryInfo("model_retry"))
    messages = to_chat_messages([ModelRequest(parts=[bound, loose, feedback])], None)
    assert messages == [
        {"role": "tool", "content": bound.model_response(), "tool_call_id": "c1", "name": "grep"},
        {"role": "user", "content": f"{loose.model_response()}\n\n{feedback.model_response()}"},
    ]
    assert "bad pattern" in messages[0]["content"]


# -- ChatTemplate ----------------------------------------------------------------------------------


def round_trip_history(args: dict[str, Any], result: str) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart("Find x")]),
        ModelResponse(parts=[call("grep", args, "c1")]),
        ModelRequest(parts=[ToolReturnPart("grep", result, tool_call_id="c1")]),
    ]


def test_qwen_renders_a_tool_round_trip_exactly() -> None:
    messages = to_chat_messages(round_trip_history({"pattern": "x"}, "a.py:1: x = 1"), "You are nestor.")
    prompt = qwen().render(messages, tools_for_template([GREP]))
    assert prompt == (
        "<|im_start|>system\nYou are nestor."
        + TOOLS_BLOCK
        + "<|im_start|>user\nFind x<|im_end|>\n"
        + '<|im_start|>assistant\n<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}\n'
        + "</tool_call><|im_end|>\n"
        + "<|im_start|>user\n<tool_response>\na.py:1: x = 1\n</tool_response><|im_end|>\n"
        + "<|im_start|>assistant\n"
    )


def test_markup_and_non_ascii_survive_unescaped() -> None:
    args = {"pattern": "a<b && c>d 'é'"}
    messages = to_chat_messages(round_trip_history(args, "<html> & ü"), None)
    prompt = qwen().render(messages, tools_for_template([GREP]))
    assert '{"name": "grep", "arguments": {"pattern": "a<b && c>d \'é\'"}}' in prompt
    assert "<tool_response>\n<html> & ü\n</tool_response>" in prompt
    assert "\\u" not in prompt and "&lt;" not in prompt and "&#39;" not in prompt
    assert prompt.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.")


def test_qwen_renders_parallel_calls_and_groups_their_results() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Where is x used?")]),
        ModelResponse(
            parts=[TextPart("Two looks."), call("grep", {"pattern": "x"}, "c1"), call("view", {}, "c2")]
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("grep", "r1", tool_call_id="c1"),
                ToolReturnPart("view", "r2", tool_call_id="c2"),
            ]
        ),
        ModelResponse(parts=[TextPart("In a.py.")]),
        ModelRequest(parts=[SystemPromptPart("<system-reminder>r</system-reminder>")]),
    ]
    prompt = qwen().render(to_chat_messages(history, "S"), tools=None)
    assert prompt == (
        "<|im_start|>system\nS<|im_end|>\n"
        "<|im_start|>user\nWhere is x used?<|im_end|>\n"
        "<|im_start|>assistant\nTwo looks.\n"
        '<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "view", "arguments": {}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n"
        "<tool_response>\nr2\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nIn a.py.<|im_end|>\n"
        "<|im_start|>user\n<system-reminder>r</system-reminder><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_generation_prompt_is_optional() -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert qwen().render(messages, add_generation_prompt=False).endswith("<|im_start|>user\nhi<|im_end|>\n")
    assert qwen().render(messages, tools=[]).endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_template_helpers_match_transformers() -> None:
    source = (
        "{{ bos_token }}{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}"
        "{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}"
        "|{{ messages[0] | tojson(indent=1) }}|{{ strftime_now('%Y') }}{{ eos_token }}{{ extra }}"
    )
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    out = template.render([{"role": "user", "content": "<a>"}, {"role": "user", "content": "b"}], extra="!")
    head, dumped, tail = out.split("|")
    assert head == "<s><a>"
    assert dumped == '{\n "role": "user",\n "content": "<a>"\n}'
    assert tail[:4].isdigit() and tail[4:] == "</s>!"


def test_template_syntax_error_is_a_provider_error() -> None:
    with pytest.raises(ProviderError) as caught:
        ChatTemplate("{% for m in messages %}\n{{ m.content }")
    assert caught.value.message.startswith(
        "the model's chat template cannot be used: it is not valid Jinja (line 2"
    )
    assert "\n" not in caught.value.message
    assert caught.value.hint and "GGUF" in caught.value.hint


def test_template_raise_exception_is_a_provider_error() -> None:
    template = ChatTemplate("{{ raise_exception('Conversation roles must alternate\nuser/assistant') }}")
    with pytest.raises(ProviderError, match="Conversation roles must alternate user/assistant"):
        template.render([{"role": "user", "content": "hi"}], None)


def test_template_runtime_error_is_a_provider_error() -> None:
    template = ChatTemplate("{{ messages[0].content + 1 }}")
    with pytest.raises(ProviderError, match="chat template cannot be used"):
        template.render([{"role": "user", "content": "hi"}])
    sandboxed = ChatTemplate("{{ messages.append(1) }}")
    with pytest.raises(ProviderError, match="chat template cannot be used"):
        sandboxed.render([])
