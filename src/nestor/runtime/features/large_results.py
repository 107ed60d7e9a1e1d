"""Large tool results: saved to a file in the session's scratch directory, shown as head and tail.

One tool result of a megabyte (a verbose build log, a huge JSON response) would fill the context
window and be sent again with every later request. :class:`LargeResultHook` writes a result over
its limit to ``<scratch_dir>/tool-results/<tool>-<call id>.txt`` and gives the model a short
version instead: a note with the file's path, the first and the last part of the result, and what
was left out between them. The model reads on with ``view`` (offset/limit) or ``grep`` on that
path, which needs no permission because it lies in the scratch directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import re
from pathlib import Path

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.core.tokens import CHARS_PER_TOKEN, estimate_tokens
from nestor.runtime.kernel.hooks import Hook, RunState

DEFAULT_MAX_TOKENS = 20_000
DEFAULT_HEAD_CHARS = 8_000
DEFAULT_TAIL_CHARS = 4_000
RESULTS_DIR_NAME = "tool-results"
# A cut moves back to a line boundary only when that loses at most this share of the window;
# one giant line (minified JSON) is cut where the window ends.
_LINE_SNAP_SHARE = 0.2
_MAX_NAME_PART_CHARS = 80
_UNSAFE_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]")


class LargeResultHook(Hook):
    """Replaces a tool result over ``max_tokens`` with its head, its tail and the path of the full text.

    Args:
        scratch_dir: The session's scratch directory; results go to its ``tool-results`` folder,
            created when the first one is saved.
        max_tokens: Results estimated above this many tokens (see
            :func:`~nestor.core.tokens.estimate_tokens`) are saved to a file.
        head_chars: About how many characters of the start to show.
        tail_chars: About how many characters of the end to show.

    Head and tail are scaled down when together they exceed the limit itself, so what the model
    sees always stays about within ``max_tokens``.

    """

    def __init__(
        self,
        scratch_dir: Path,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        head_chars: int = DEFAULT_HEAD_CHARS,
        tail_chars: int = DEFAULT_TAIL_CHARS,
    ) -> None:
        if max_tokens < 1 or head_chars < 0 or tail_chars < 0:
            raise ValueError("max_tokens must be positive and head_chars, tail_chars not negative")
        self.scratch_dir = scratch_dir.absolute()
        self.max_tokens = max_tokens
        limit_chars = max_tokens * CHARS_PER_TOKEN
        shown = head_chars + tail_chars
        if shown > limit_chars:
            head_chars = head_chars * limit_chars // shown
            tail_chars = tail_chars * limit_chars // shown
        self.head_chars = head_chars
        self.tail_chars = tail_chars

    @property
    def results_dir(self) -> Path:
        """The directory saved results go to."""
        return self.scratch_dir / RESULTS_DIR_NAME

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Return ``result`` itself when small enough, else a short version pointing at the saved file."""
        text = result.content if isinstance(result.content, str) else result.model_response_str()
        tokens = estimate_tokens(text)
        if tokens <= self.max_tokens:
            return result
        name = result_file_name(result.tool_name, result.tool_call_id)
        size = f"{len(text)} characters in {_count_lines(text)} lines (~{tokens} tokens)"
        try:
            path = await asyncio.to_thread(save_result, self.results_dir, name, text)
        except Exception as exc:  # a full disk must not end the run: the model still gets head and tail
            note = (
                f"[The {result.tool_name} result was {size}, too large to show in full, and it could not "
                f"be saved to {self.results_dir / name} ({_describe(exc)}); only its start and end are "
                "shown below, the middle is lost.]"
            )
        else:
            note = (
                f"[The {result.tool_name} result was {size}, too large to show in full. It was saved to "
                f"{path}; use view with offset/limit or grep on that path to read more. Its start and "
                "end are shown below.]"
            )
        shortened = f"{note}\n\n{head_and_tail(text, self.head_chars, self.tail_chars)}"
        return dataclasses.replace(result, content=shortened)


def head_and_tail(text: str, head_chars: int, tail_chars: int) -> str:
    """Return the start and end of ``text`` with a marker saying how much was left out between them.

    The head ends after a line break and the tail starts after one when a line break lies near
    the cut (within the last or first fifth of the window); otherwise the cut falls mid-line.
    When head and tail would cover all of ``text``, it is returned whole.
    """
    if head_chars + tail_chars >= len(text):
        return text
    head_end = head_chars
    line_end = text.rfind("\n", 0, head_end)
    if line_end != -1 and head_end - (line_end + 1) <= head_chars * _LINE_SNAP_SHARE:
        head_end = line_end + 1
    tail_start = len(text) - tail_chars
    line_start = text.find("\n", tail_start)
    if line_start != -1 and line_start + 1 - tail_start <= tail_chars * _LINE_SNAP_SHARE:
        tail_start = line_start + 1
    omitted = text[head_end:tail_start]
    lines = _count_lines(omitted)
    marker = f"[... {lines} {'line' if lines == 1 else 'lines'} / {len(omitted)} characters omitted ...]"
    head = text[:head_end]
    separator = "" if head.endswith("\n") or not head else "\n"
    return f"{head}{separator}{marker}\n{text[tail_start:]}"


def result_file_name(tool_name: str, tool_call_id: str) -> str:
    """Return ``<tool_name>-<tool_call_id>.txt``, made safe as one file name on every platform.

    Characters other than letters, digits, ``.``, ``_`` and ``-`` become ``_``, long parts are
    shortened, and a part that had to change gets a short hash of the original, so two different
    odd ids never share a file.
    """
    return f"{_safe_name_part(tool_name, 'tool')}-{_safe_name_part(tool_call_id, 'call')}.txt"


def save_result(directory: Path, name: str, text: str) -> Path:
    """Write ``text`` to a new file ``directory/name`` (creating ``directory``) and return its path.

    Blocking: call it in a thread. An existing file is never overwritten (some providers reuse
    call ids across responses, and the model may still want the earlier result): the name then
    gets a ``-2``, ``-3``, ... suffix. Characters UTF-8 cannot encode (lone surrogates) become
    ``?``, so the file is always valid UTF-8 that ``view`` can read.

    Raises:
        OSError: The directory or the file cannot be created or written.

    """
    directory.mkdir(parents=True, exist_ok=True)
    stem, dot, suffix = name.rpartition(".")
    candidate = directory / name
    number = 1
    while True:
        try:
            file = candidate.open("x", encoding="utf-8", errors="replace", newline="")
        except FileExistsError:
            number += 1
            candidate = directory / f"{stem}-{number}{dot}{suffix}"
            continue
        try:
            with file:
                file.write(text)
        except BaseException:
            # A half-written file would look like the whole result to a later reader.
            with contextlib.suppress(OSError):
                candidate.unlink(missing_ok=True)
            raise
        return candidate


def _safe_name_part(raw: str, fallback: str) -> str:
    safe = _UNSAFE_NAME_CHARACTERS.sub("_", raw)[:_MAX_NAME_PART_CHARS].lstrip(".") or fallback
    if safe != raw:
        digest = hashlib.sha256(raw.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
        safe = f"{safe}_{digest}"
    return safe


def _count_lines(text: str) -> int:
    """Lines in ``text``, a last line without a line break included."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _describe(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return f"{type(error).__name__}: {error}"


__all__ = [
    "DEFAULT_HEAD_CHARS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TAIL_CHARS",
    "LargeResultHook",
    "head_and_tail",
    "result_file_name",
    "save_result",
]
