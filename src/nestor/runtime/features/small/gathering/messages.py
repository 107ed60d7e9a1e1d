"""Where an error message a question quotes comes from: the line of the project that produces it.

"I get `TypeError: argument str must be a string`: which line throws it?" is answered by the line
whose string has those words, and a message is rarely in the source as printed: the values in it
were formatted in (``f"Signature age {age} > {max_age} seconds"``). So nestor searches (a real
``grep`` call) for the longest run of the message's words that holds no number, and ranks the
lines found by how many of the message's words they have, outside the tests first; the best ones
are evidence for the answer step and follow its words.
"""

from __future__ import annotations

import re

from nestor.runtime.features.small.gathering.code_index import CodeIndex
from nestor.runtime.features.small.gathering.project import is_test_path
from nestor.runtime.features.small.workspace import Workspace

MAX_SOURCES = 2
MIN_RUN_WORDS = 2
_QUOTED = re.compile(r"`([^`\n]{12,200})`|\"([^\"\n]{12,200})\"|'([^'\n]{12,200})'")
_EXCEPTION_PREFIX = re.compile(
    r"^\s*(?:[\w.]+(?:Error|Exception|Expired|Warning)\w*|panicked at [^:]*:)\s*:\s*"
)
_AFTER_FAILURE = re.compile(
    r"\b(?:fails?|failed|crash(?:es|ed)?|errors?|raises?|throws?|says?|logs?|prints?)\s+(?:with\s*)?:\s*"
    r"(.+?)(?:\.\s+[A-Z]|\?|\n|$)"
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z_'-]*|[<>=!]+")


def quoted_message(prompt: str) -> str | None:
    """The error message ``prompt`` quotes (without its exception's name), if it quotes one.

    A message is in quotes or backticks, or follows "fails with:" / "error:"; of several, the one
    with the longest run of plain words (a command in backticks has few).
    """
    candidates = [next(group for group in match.groups() if group) for match in _QUOTED.finditer(prompt)]
    candidates += [match.group(1) for match in _AFTER_FAILURE.finditer(prompt)]
    best: tuple[int, str] | None = None
    for text in candidates:
        message = _EXCEPTION_PREFIX.sub("", text).strip()
        run = _searched_run(message)
        if run is not None and (best is None or len(run.split()) > best[0]):
            best = (len(run.split()), message)
    return best[1] if best else None


async def message_sources(work: Workspace, message: str, index: CodeIndex) -> list[str]:
    """``path:line`` rows of the lines that most likely produce ``message``, best first."""
    run = _searched_run(message)
    if run is None:
        return []
    (found,) = await work.host.run_tools([("grep", {"pattern": re.escape(run)})])
    wanted = {word.lower() for word in _WORD.findall(message)}
    scored: list[tuple[float, str, int, str]] = []
    for path, number in found.metadata.get("hits", []) if found.ok else []:
        path, number = str(path), int(number)
        lines = (work.reader.read_text(path) or "").splitlines()
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        words = {word.lower() for word in _WORD.findall(text)}
        score = len(wanted & words) - (10 if is_test_path(path) else 0)
        scored.append((score, path, number, text))
    scored.sort(key=lambda row: (-row[0], row[1], row[2]))
    rows: list[str] = []
    for _, path, number, text in scored[:MAX_SOURCES]:
        function = index.enclosing(path, number)
        where = f" in `{function.qualified}`" if function else ""
        rows.append(f"`{path}:{number}`{where}: `{text[:160]}`")
    return rows


def _searched_run(message: str) -> str | None:
    """The longest run of the message's words with no number or quoted value in it (what the source has)."""
    runs: list[str] = []
    current: list[str] = []
    for token in message.split():
        plain = re.fullmatch(r"[A-Za-z][A-Za-z,;.:-]*", token) is not None
        if plain:
            current.append(token)
        else:
            runs.append(" ".join(current))
            current = []
    runs.append(" ".join(current))
    best = max(runs, key=lambda run: len(run.split()))
    best = best.rstrip(",;.:")
    return best if len(best.split()) >= MIN_RUN_WORDS else None
