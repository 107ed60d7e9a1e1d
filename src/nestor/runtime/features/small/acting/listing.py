"""Answers to "list every place that ...": nestor's own search, each place with its function.

"List every place that raises ValidationError" has an exact answer a search gives, and a 1.5B
model summarising the search drops half of it. So nestor searches (a real ``grep`` call) for the
name the request writes, keeps the lines that do what it says (``raise``/``throw`` for "raises",
a call for "calls"), in the files it names or, unless it asks for them, outside the tests, and
lists each with the function it is in.
"""

from __future__ import annotations

import re

from nestor.runtime.features.small.gathering.code_index import CodeIndex
from nestor.runtime.features.small.gathering.project import is_test_path, project_files
from nestor.runtime.features.small.gathering.ranking import term_pattern
from nestor.runtime.features.small.understanding.intent import Intent
from nestor.runtime.features.small.understanding.scope import named_files
from nestor.runtime.features.small.workspace import Workspace

MAX_PLACES = 40
_ACTIONS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (
        re.compile(r"\b(?:raises?|raised|raising|throws?|thrown|throwing)\b", re.I),
        re.compile(r"\b(?:raise|throw)\b"),
    ),
    (re.compile(r"\b(?:calls?|called|calling|invokes?)\b", re.I), re.compile(r"\(")),
    (re.compile(r"\b(?:imports?|imported)\b", re.I), re.compile(r"\b(?:import|require|use)\b")),
)
_WANTS_TESTS = re.compile(r"\b(?:in|including|and)\s+(?:the\s+)?tests?\b", re.IGNORECASE)


async def list_places(work: Workspace, prompt: str, intent: Intent, index: CodeIndex) -> str | None:
    """Every line doing what the request says with the name it writes; None when it names none."""
    names = [term for term in intent.terms if term.exact and not term.is_file and not term.qualifier]
    if not names:
        return None
    files = named_files(prompt, project_files(work.reader.root))
    wants_tests = bool(_WANTS_TESTS.search(prompt)) or any(is_test_path(path) for path in files)
    actions = [doing for asked, doing in _ACTIONS if asked.search(prompt)]
    # The name most lines of which do what is asked: "raises ValidationError" over "in models.py".
    best: list[tuple[str, int, str]] = []
    for term in names[:3]:
        (found,) = await work.host.run_tools([("grep", {"pattern": term_pattern(term)})])
        places: list[tuple[str, int, str]] = []
        for path, number in found.metadata.get("hits", []) if found.ok else []:
            path, number = str(path), int(number)
            if files and path not in files:
                continue
            if not files and not wants_tests and is_test_path(path):
                continue
            lines = (work.reader.read_text(path) or "").splitlines()
            text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
            if all(action.search(text) for action in actions):
                places.append((path, number, text))
        if len(places) > len(best):
            best = places
    if not best:
        return None
    rows = []
    for path, number, text in best[:MAX_PLACES]:
        function = index.enclosing(path, number)
        where = f" in `{function.qualified}`" if function else ""
        rows.append(f"- {path}:{number}{where}: `{text[:120]}`")
    more = f"\n(and {len(best) - MAX_PLACES} more)" if len(best) > MAX_PLACES else ""
    return f"{len(best)} place{'s' if len(best) != 1 else ''}:\n" + "\n".join(rows) + more
