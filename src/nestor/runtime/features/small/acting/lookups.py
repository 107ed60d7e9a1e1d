"""Answers nestor reads off the code itself: who calls a function, which tests cover it, what a type has.

Asked "which functions call X", the 1.5B model listed X itself and functions that do not call
it; the calls are in the code, and :mod:`..gathering.code_index` has them, in every language
with a grammar. So these answers are nestor's own, exact and cited; the model is not asked. Each
returns None when the question's name is not one the code defines (the answer step takes over).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nestor.runtime.features.small.gathering.code_index import CodeIndex, TestCase, words_of
from nestor.runtime.features.small.gathering.project import is_test_path
from nestor.runtime.features.small.understanding.intent import Intent, SearchTerm

MAX_TESTS = 8
"""Tests listed at most for "which tests cover X"."""
_FUNCTION_KINDS = ("function", "method")


def callers_answer(prompt: str, intent: Intent, index: CodeIndex) -> str | None:
    """Which functions call the function the question names, each with where it calls it."""
    target = _named(prompt, intent, index, _FUNCTION_KINDS, after=r"\b(?:calls?|invokes?|uses?|of)\b")
    if target is None:
        return None
    calls = [call for call in index.calls_of(target) if call.caller is None or call.caller.name != target]
    code = [call for call in calls if not is_test_path(call.path)]
    tests = [call for call in calls if is_test_path(call.path)]
    if not calls:
        return f"Nothing in the project calls `{target}` (I looked at every call in its source files)."
    lines: list[str] = []
    by_caller: dict[str, list[str]] = {}
    for call in code:
        name = f"`{call.caller.qualified}`" if call.caller else f"the top level of {call.path}"
        by_caller.setdefault(name, []).append(f"{call.path}:{call.line}")
    if by_caller:
        lines.append(f"`{target}` is called by:")
        lines += [f"- {name} ({', '.join(places)})" for name, places in by_caller.items()]
    else:
        lines.append(f"No function outside the tests calls `{target}`.")
    if tests:
        files = sorted({call.path for call in tests})
        count = f"{len(tests)} call{'s' if len(tests) != 1 else ''}"
        lines.append(f"The tests call it too ({count}, in {', '.join(files)}).")
    return "\n".join(lines)


def covers_answer(prompt: str, intent: Intent, index: CodeIndex) -> str | None:
    """The tests that cover what the question names: by their names, by what they call and use."""
    terms = [term for term in intent.terms if not term.is_file and not term.common]
    scored = sorted(
        ((score, test) for test in index.tests if (score := _coverage(test, terms)) > 0),
        key=lambda pair: (-pair[0], pair[1].path, pair[1].line),
    )
    if not scored:
        return None
    best = scored[0][0]
    chosen = [test for score, test in scored if score >= best / 2][:MAX_TESTS]
    subject = _subject(terms, prompt)
    lines = [f"The tests that cover {subject}:"]
    lines += [f"- `{test.title}` ({test.path}:{test.line})" for test in sorted(chosen, key=_place)]
    return "\n".join(lines)


def members_answer(prompt: str, intent: Intent, index: CodeIndex) -> str | None:
    """What an enum, class or struct the question names has: its variants, methods and fields."""
    kinds = ("enum", "class", "struct", "trait")
    target = _named(prompt, intent, index, kinds)
    if target is None:
        return None
    definition = next(d for d in index.defined(target) if d.kind in kinds)
    members = [
        member
        for member in index.members(target)
        if member.path == definition.path or definition.kind != "enum"
    ]
    variants = [member for member in members if member.kind == "variant"]
    shown = variants or [member for member in members if not member.name.startswith("__")]
    if not shown:
        return None
    what = "variants" if variants else "members"
    names = ", ".join(f"`{member.name}`" for member in shown)
    return f"`{target}` ({definition.path}:{definition.line}) has {len(shown)} {what}: {names}."


def _named(
    prompt: str, intent: Intent, index: CodeIndex, kinds: Sequence[str], *, after: str | None = None
) -> str | None:
    """The name the question asks about that the code defines as one of ``kinds``.

    Of the names it writes (as code, or plain words the project defines), the first after the
    verb ``after`` matches, else the first defined.
    """
    candidates = [term for term in intent.terms if term.exact and not term.is_file and not term.qualifier]
    defined = [term for term in candidates if any(d.kind in kinds for d in index.defined(term.text))]
    if not defined:
        return None
    position = {term.text: _position(prompt, term.text) for term in defined}
    verb = re.search(after, prompt, re.IGNORECASE) if after else None
    if verb is not None:
        later = [term for term in defined if position[term.text] >= verb.end()]
        if later:
            return min(later, key=lambda term: position[term.text]).text
    return min(defined, key=lambda term: position[term.text]).text


def _position(prompt: str, name: str) -> int:
    match = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", prompt)
    return match.start() if match else len(prompt)


def _coverage(test: TestCase, terms: Sequence[SearchTerm]) -> float:
    """How much ``test`` is about the terms: its title most, then what it calls, then what it uses."""
    title = words_of(test.title)
    score = 0.0
    for term in terms:
        weight = term.weight * (0.3 if term.qualifier else 1.0)
        words = words_of(term.text)
        if not words:
            continue
        if _contains(title, words, prefix=not term.exact):
            score += 3 * weight
        if term.exact and term.text in test.calls:
            score += 2 * weight
        elif term.exact and term.text in test.names:
            score += weight
    return score


def _contains(words: list[str], part: list[str], *, prefix: bool) -> bool:
    """Whether ``part`` is a run of ``words`` (its last word as a prefix, for a stem)."""
    for start in range(len(words) - len(part) + 1):
        window = words[start : start + len(part)]
        if window[:-1] == part[:-1] and (
            window[-1] == part[-1] or (prefix and window[-1].startswith(part[-1]))
        ):
            return True
    return False


def _subject(terms: Sequence[SearchTerm], prompt: str) -> str:
    # A name the harness searched for the question's words (Rust's `PartialOrd` for "compare")
    # is not what the user asked about.
    asked = [term for term in terms if term.exact and not term.qualifier and term.text in prompt]
    names = [f"`{term.text}`" for term in asked][:2]
    return " and ".join(names) if names else "it"


def _place(test: TestCase) -> tuple[str, int]:
    return test.path, test.line
