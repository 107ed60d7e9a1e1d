"""Drafting agent files with a scripted model, and cutting the file out of a model's reply."""

from __future__ import annotations

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelRequest, UserPromptPart

from nestor.core.errors import ModelRequestError, NestorError
from nestor.providers.build import BuiltModel
from nestor.providers.retry import RetryPolicy
from nestor.runtime.features.agent_drafts import draft_agent_spec, extract_agent_markdown
from nestor.testing import ScriptedModel, fail, reply

AGENT = "---\nname: sql-reviewer\ndescription: Reviews SQL.\ntools: [view, grep]\n---\nYou review SQL.\n"


def built(model: ScriptedModel) -> BuiltModel:
    return BuiltModel(model=model, settings={}, name="scripted:large", context_window=100_000, priced=False)


def sent_prompt(model: ScriptedModel) -> str:
    request = model.requests[0].messages[-1]
    assert isinstance(request, ModelRequest)
    return "\n".join(str(part.content) for part in request.parts if isinstance(part, UserPromptPart))


async def test_one_request_carries_the_description_the_name_and_the_tools() -> None:
    model = ScriptedModel([reply(AGENT)])
    text = await draft_agent_spec(
        built(model), "reviews SQL migrations", tool_names=("view", "grep", "bash"), name="sql-reviewer"
    )
    assert text == AGENT
    assert len(model.requests) == 1
    prompt = sent_prompt(model)
    assert "reviews SQL migrations" in prompt and "Its name must be: sql-reviewer" in prompt
    instructions = model.requests[0].info.instructions or ""
    assert "chosen from: view, grep, bash." in instructions
    assert "YAML front matter" in instructions


async def test_without_a_name_the_model_chooses_one() -> None:
    model = ScriptedModel([reply(AGENT)])
    await draft_agent_spec(built(model), "reviews SQL", tool_names=("view",))
    assert "Its name must be" not in sent_prompt(model)


async def test_an_empty_reply_is_an_error_with_a_hint() -> None:
    model = ScriptedModel([reply("  \n")])
    with pytest.raises(NestorError, match="no agent file") as caught:
        await draft_agent_spec(built(model), "reviews SQL", tool_names=("view",))
    assert caught.value.hint and "nestor agents create" in caught.value.hint


async def test_a_transient_failure_is_retried_then_a_lasting_one_raised() -> None:
    overloaded = ModelHTTPError(503, "scripted", "overloaded")
    model = ScriptedModel([fail(overloaded), reply(AGENT)])

    async def no_wait(_delay: float) -> None:
        return None

    text = await draft_agent_spec(built(model), "x", tool_names=("view",), sleep=no_wait)
    assert text == AGENT and len(model.requests) == 2
    failing = ScriptedModel([fail(overloaded), fail(overloaded)])
    with pytest.raises(ModelRequestError, match="after 2 attempts"):
        await draft_agent_spec(
            built(failing), "x", tool_names=("view",), retry=RetryPolicy(max_attempts=2), sleep=no_wait
        )


def test_extract_drops_a_sentence_before_and_a_fence_around_the_file() -> None:
    assert extract_agent_markdown(AGENT) == AGENT
    assert extract_agent_markdown("Here is the agent:\n\n" + AGENT) == AGENT
    assert extract_agent_markdown("```markdown\n" + AGENT + "```\nHope it helps.") == AGENT


def test_extract_keeps_code_fences_inside_the_prompt() -> None:
    prompt = "Run:\n\n```bash\npytest -q\n```\n\nReport failures."
    fenced = f"```md\n---\nname: t\ndescription: d\n---\n{prompt}\n```"
    assert extract_agent_markdown(fenced) == f"---\nname: t\ndescription: d\n---\n{prompt}\n"


def test_extract_leaves_a_reply_without_front_matter_for_the_reader_to_report() -> None:
    assert extract_agent_markdown("  I cannot do that.  ") == "I cannot do that.\n"
    assert extract_agent_markdown("") == ""
