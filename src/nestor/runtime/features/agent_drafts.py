"""Drafting an agent file from a plain-language description (``nestor agents create --from-description``).

One request to a model (the large role) returns a nestor agent file: YAML front matter and the
agent's system prompt. The draft is only text; the caller reads it with the agent readers, shows it
and writes it if the user agrees, so a bad draft is reported like any other bad agent file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from pydantic_ai.messages import InstructionPart, ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from nestor.core.errors import NestorError
from nestor.providers.build import BuiltModel
from nestor.providers.retry import RetryPolicy
from nestor.runtime.kernel.model_call import ModelCall, response_text

DRAFT_INSTRUCTIONS = """\
You write agent definition files for nestor, a terminal coding assistant whose main agent delegates \
focused jobs to sub-agents. Reply with exactly one agent file and nothing else: no explanation, no \
code fence.

The file is YAML front matter between two lines of `---`, then the agent's system prompt in Markdown:

---
name: <short-kebab-case-name>
description: <when the main agent should use this agent and what it returns, one or two sentences>
tools: [<tool>, <tool>]
---
<the system prompt>

Rules:
- name: letters, digits, '-', '_' and '.', starting with a letter or digit; short and descriptive.
- description: written for the main agent deciding whom to delegate to: what jobs fit, what comes back.
- tools: only the tools the job needs, chosen from: {tools}. Read-only agents get view, ls, glob \
and grep. Leave the key out only when the agent truly needs every tool.
- model: leave it out (the agent then uses its parent's model), or write `small` for simple, fast, \
cheap jobs.
- Use no other keys.
- The system prompt speaks to the agent as "you": its role, how to work step by step, what it must \
not do, and exactly what its final report to the main agent contains. The agent gets only the task \
text, never the user's conversation, and cannot ask questions, so it must say what it assumed.
"""

DRAFT_TIMEOUT_S = 300.0


async def draft_agent_spec(
    model: BuiltModel,
    description: str,
    *,
    tool_names: Sequence[str],
    name: str | None = None,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    timeout_s: float = DRAFT_TIMEOUT_S,
) -> str:
    """Ask ``model`` for a nestor agent file doing what ``description`` says.

    Args:
        model: The model drafting (the large role).
        description: What the agent should do, in the user's words.
        tool_names: The tools the agent may be given.
        name: The agent's name, when the user chose it.
        retry: How transient failures are retried (default: :class:`RetryPolicy`).
        sleep: Waits between attempts (tests pass a fast one).
        timeout_s: Longest wait for the whole request, retries included.

    Returns:
        The Markdown of the agent file, front matter first (not validated: read it with the agent
        readers).

    Raises:
        ModelRequestError: The request failed after retries.
        NestorError: The reply holds no text, or the request timed out.

    """
    instructions = DRAFT_INSTRUCTIONS.format(tools=", ".join(tool_names))
    call = ModelCall(
        model=model.model,
        settings=model.settings,
        parameters=ModelRequestParameters(
            allow_text_output=True, instruction_parts=[InstructionPart(content=instructions)]
        ),
        retry=retry or RetryPolicy(),
        sleep=sleep,
    )
    try:
        async with asyncio.timeout(timeout_s):
            response = await call.request(
                draft_request(description, name=name),
                agent_id="agent-draft",
                publish=lambda _event: None,
                stream_text=False,
            )
    except TimeoutError:
        raise NestorError(
            f"{model.name} did not answer within {timeout_s:g} seconds",
            hint="try again, or write the agent interactively: nestor agents create",
        ) from None
    text = extract_agent_markdown(response_text(response))
    if not text:
        raise NestorError(
            f"{model.name} answered with no agent file",
            hint="try again with a more detailed description, or: nestor agents create",
        )
    return text


def draft_request(description: str, *, name: str | None = None) -> list[ModelMessage]:
    """The message asking for the agent file (the description, and the name when one is given)."""
    text = f"Write the agent file for this agent:\n\n<description>\n{description.strip()}\n</description>"
    if name:
        text += f"\n\nIts name must be: {name}"
    return [ModelRequest(parts=[UserPromptPart(text)])]


def extract_agent_markdown(reply: str) -> str:
    """The agent file in a model's ``reply``: from its first ``---`` line, without a code fence around it.

    Models often wrap files in a code fence or say a sentence first despite being told not to; both
    are removed. A reply without front matter is returned stripped, for the reader to report.
    """
    lines = reply.strip().split("\n")
    start = next((index for index, line in enumerate(lines) if line.rstrip() == "---"), None)
    if start is None:
        text = "\n".join(lines).strip()
        return text + "\n" if text else ""
    end = len(lines)
    if any(line.lstrip().startswith("```") for line in lines[:start]):
        # The closing fence is the last one: the prompt itself may hold fenced examples.
        end = next(
            (index for index in range(len(lines) - 1, start, -1) if lines[index].strip() == "```"), end
        )
    return "\n".join(lines[start:end]).strip() + "\n"
