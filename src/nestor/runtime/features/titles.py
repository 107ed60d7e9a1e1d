"""Session titles written by the small model after the first exchange.

A new session starts with the first line of its first prompt as its title. Once the first run
ends, :class:`TitleHook` hands the first prompt and the final answer to :class:`TitleWriter`, which
asks the small model for a short title in a background task, stores it and publishes
:class:`~nestor.core.events.SessionTitled`. A title is a nicety: every failure (no reply, an error,
a timeout, an empty answer) leaves the first-line title in place, is recorded on the writer and is
never raised. The title request's tokens and cost are real spending and join the session totals.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic_ai.direct import model_request
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from nestor.bus import EventBus
from nestor.core.events import SessionTitled
from nestor.core.prompts import prompt_text
from nestor.providers.usage import usage_from_response
from nestor.runtime.kernel.hooks import Hook, RunState
from nestor.runtime.kernel.model_call import response_text
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore

if TYPE_CHECKING:
    from nestor.runtime.kernel.setup import RunResult

TITLE_TIMEOUT_S = 20.0
MAX_TITLE_CHARS = 80
_MAX_INPUT_CHARS = 3000

TITLE_INSTRUCTIONS = (
    "You name conversations between a user and a coding assistant. Reply with a title for the "
    "conversation you are shown and nothing else: 3 to 7 words, plain text on one line, no quotes, "
    "no Markdown, no punctuation at the end, in the language of the user's message."
)

_PREFIX = re.compile(
    r"^[*_]*(?:session\s+|conversation\s+)?title[*_]*\s*[:\-\u2013\u2014][*_]*\s*", re.IGNORECASE
)
_LEADING_MARKUP = re.compile(r"^(?:#{1,6}\s+|>\s*|[-*+]\s+)")
_EMPHASIS = re.compile(r"^(\*\*|__|\*|_)(.+)\1$")
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"
_TRAILING_PUNCTUATION = ".,;:\u3002"


class TitleWriter:
    """Asks a model for session titles in background tasks; failures are recorded, never raised.

    Args:
        model: The small model.
        sessions: Where titles and the title requests' usage are stored.
        bus: Where :class:`~nestor.core.events.SessionTitled` goes.
        model_settings: Settings sent with the request (the built model's).
        priced: Whether public price tables apply to ``model`` (see ``BuiltModel.priced``).
        timeout_s: Longest wait for one title request.

    Attributes:
        last_error: The latest failure (an exception, a timeout, an empty reply), for diagnostics.

    """

    def __init__(
        self,
        model: Model,
        *,
        sessions: SessionStore,
        bus: EventBus,
        model_settings: ModelSettings | None = None,
        priced: bool = True,
        timeout_s: float = TITLE_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.model_settings = model_settings
        self.priced = priced
        self.timeout_s = timeout_s
        self.last_error: Exception | None = None
        self._sessions = sessions
        self._bus = bus
        self._tasks: set[asyncio.Task[str | None]] = set()
        self._parameters = ModelRequestParameters(
            allow_text_output=True, instruction_parts=[InstructionPart(content=TITLE_INSTRUCTIONS)]
        )

    @property
    def pending(self) -> int:
        """How many title requests are in progress."""
        return sum(1 for task in self._tasks if not task.done())

    def start(self, session_id: str, prompt: str, answer: str) -> asyncio.Task[str | None]:
        """Write the title of ``session_id`` in a background task (see :meth:`write`)."""
        task = asyncio.create_task(self.write(session_id, prompt, answer), name=f"title {session_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def write(self, session_id: str, prompt: str, answer: str) -> str | None:
        """Ask for a title from the first ``prompt`` and ``answer``, store and publish it.

        Returns:
            The title, or None when it could not be written (the session keeps its title and
            :attr:`last_error` says why).

        """
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await model_request(
                    self.model,
                    title_request(prompt, answer),
                    model_settings=self.model_settings,
                    model_request_parameters=self._parameters,
                )
            self._sessions.add_usage(session_id, usage_from_response(response, priced=self.priced))
            title = clean_title(response_text(response))
            if not title:
                raise ValueError("the model answered the title request with no usable text")
            self._sessions.set_title(session_id, title)
        except Exception as exc:  # a title is never worth an error: the first-line title stays
            self.last_error = exc
            return None
        self._bus.publish(SessionTitled(agent_id=session_id, title=title))
        return title

    async def wait(self, timeout: float | None = None) -> None:
        """Wait until the title requests in progress end, or ``timeout`` seconds pass."""
        tasks = [task for task in self._tasks if not task.done()]
        if tasks:
            # asyncio.wait, not gather: a timeout leaves the tasks running for cancel() to stop.
            await asyncio.wait(tasks, timeout=timeout)

    def cancel(self) -> None:
        """Cancel the title requests in progress (the sessions keep their titles)."""
        for task in self._tasks:
            task.cancel()


class TitleHook(Hook):
    """Starts the title of a new session when its first run ends; only once.

    The first prompt is read back from the stored messages, so the hook works whoever sends that
    prompt (``nestor run`` or the REPL). A run that ends in an error or is cancelled starts
    nothing; the next one that ends otherwise does.

    Args:
        writer: Writes the title.
        messages: The message store, to read the session's first prompt.

    """

    def __init__(self, writer: TitleWriter, messages: MessageStore) -> None:
        self.writer = writer
        self._messages = messages
        self.started = False

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """Start the title after the first run that produced an answer."""
        if self.started or result.is_error or result.stop_reason == "cancelled":
            return
        try:
            prompt = first_prompt(self._messages.list(state.agent_id))
        except Exception as exc:  # the run must end normally whatever the store says
            self.writer.last_error = exc
            return
        if not prompt:
            return
        self.started = True
        self.writer.start(state.agent_id, prompt, result.text)


def title_request(prompt: str, answer: str) -> list[ModelMessage]:
    """The message asking for a title: the first prompt and answer, each cut to a few thousand characters."""
    text = (
        "Write the title of this conversation.\n\n"
        f"<user_message>\n{_cut(prompt)}\n</user_message>\n\n"
        f"<assistant_answer>\n{_cut(answer)}\n</assistant_answer>"
    )
    return [ModelRequest(parts=[UserPromptPart(text)])]


def clean_title(text: str) -> str:
    """A model's reply as a title: its first line with text, without quotes, Markdown or ``Title:``.

    A final period (comma, colon) goes too, and a title longer than :data:`MAX_TITLE_CHARS` is cut
    at a word and ends with ``...``.

    Returns:
        The title; empty when no line of ``text`` has one.

    """
    line = next((cleaned for line in text.splitlines() if (cleaned := _clean_line(line))), "")
    if len(line) <= MAX_TITLE_CHARS:
        return line
    cut = line[: MAX_TITLE_CHARS - 3]
    if " " in cut[MAX_TITLE_CHARS // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(_TRAILING_PUNCTUATION + " ") + "..."


def _clean_line(line: str) -> str:
    previous = None
    while line != previous:
        previous = line
        line = _LEADING_MARKUP.sub("", line.strip().strip(_QUOTES).strip())
        line = _EMPHASIS.sub(r"\2", _PREFIX.sub("", line)).rstrip(_TRAILING_PUNCTUATION)
    return " ".join(line.split())


def first_prompt(messages: Sequence[ModelMessage]) -> str:
    """The text of the first user prompt in ``messages`` (empty when there is none)."""
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                return prompt_text(part.content)
    return ""


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_INPUT_CHARS else text[:_MAX_INPUT_CHARS] + "\n[...]"
