"""The small-model harness: how an agent on a 1.5B model answers and edits.

A small model loses its way in an open tool loop: it describes calls instead of making them, and
repeats its earlier prose after a tool found the answer. So on the small-model profile nestor does
the steps a small model does badly, and asks the model only for what it does well:

- **questions**: nestor reads the prompt (:mod:`.intent`), searches for its terms and reads the
  best regions with real tool calls (:mod:`.retrieval`), then one *answer step* sees only the
  question and that evidence, never the model's earlier prose;
- **tours**: the evidence is the project's card (README, layout, test command: :mod:`.project`);
- **changes**: nestor runs the project's tests, gathers evidence around the request and the
  failure, asks for SEARCH/REPLACE blocks (:mod:`.edit_blocks`), applies them with the ``edit``
  tool, runs the tests again, and tries again with the new failure, a few times at most; a rename
  is applied to every whole-word occurrence;
- **delegation**: a prompt that names an agent ("use the explore agent") starts it with ``task``,
  and its report (without the footer) is the answer.

Every search, read, edit, command and sub-agent is a real tool call through the agent, so
permissions, events and the stored session see them as usual.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from nestor.runtime.small import prompts
from nestor.runtime.small.edit_blocks import EditBlock, locate, parse_edit_blocks
from nestor.runtime.small.functions import (
    FunctionSpan,
    called_names,
    function_at,
    functions_named,
    rewritten_function,
)
from nestor.runtime.small.intent import Intent, SearchTerm, read_intent
from nestor.runtime.small.project import project_card, project_files, runnable_test_command
from nestor.runtime.small.reader import ProjectReader
from nestor.runtime.small.retrieval import Evidence, ToolCall, ToolOutcome, gather_evidence

ANSWER_MAX_TOKENS = 320
EDIT_MAX_TOKENS = 700
EDIT_ATTEMPTS = 3
TEST_TIMEOUT_S = 180
_TRACEBACK_LOCATION = re.compile(r"^([\w./-]+\.py):(\d+)(?::| in )", re.MULTILINE)
_RENAME = re.compile(
    r"\brenam\w*\b(?P<before>.{1,120}?)\s(?:to|into|as)\s+[`'\"]?(?P<new>[A-Za-z_]\w*)",
    re.IGNORECASE | re.DOTALL,
)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
_ASKS_FOR_TESTS = re.compile(
    r"\b(?:add|write|update|change|fix)\s+(?:a\s+|the\s+|new\s+)*tests?\b|\btests?\s+for\b", re.I
)


@dataclass(frozen=True, slots=True)
class PlannedEdit:
    """One change to make with the ``edit`` tool (or ``write``, for a new file: ``old`` empty)."""

    path: str
    old: str
    new: str
    replace_all: bool = False

    def call(self) -> ToolCall:
        """The tool call that makes this edit."""
        if not self.old:
            return ("write", {"path": self.path, "content": self.new})
        arguments: dict[str, object] = {"path": self.path, "old_string": self.old, "new_string": self.new}
        if self.replace_all:
            arguments["replace_all"] = True
        return ("edit", arguments)


class HarnessHost(Protocol):
    """What the harness needs of the agent it drives."""

    def tool_names(self) -> set[str]:
        """The names of the agent's tools."""
        ...

    async def run_tools(self, calls: Sequence[ToolCall]) -> list[ToolOutcome]:
        """Make ``calls`` as the agent's tool calls (in parallel) and return their outcomes."""
        ...

    async def ask(self, instructions: str, prompt: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        """One model request without tools; None when a budget stopped the run first.

        ``attempt`` > 0 asks again differently: sampled warmer, with another seed, so that a retry
        of a deterministic small model does not repeat the same reply.
        """
        ...


@dataclass(slots=True)
class SmallModelHarness:
    """Runs one prompt of an agent on a small model (see the module docstring).

    Attributes:
        reader: Reads the project's files for ranking and structure.
        read_only: The agent may not change anything: change requests get an answer instead.
        agent_names: The agents a prompt may name for delegation (empty for sub-agents).

    """

    reader: ProjectReader
    read_only: bool = False
    agent_names: Callable[[], Iterable[str]] = field(default=lambda: ())

    async def run_turn(self, host: HarnessHost, prompt: str) -> str | None:
        """Handle ``prompt`` to the end; returns the final answer (None when a budget stopped it)."""
        tools = host.tool_names()
        intent = read_intent(prompt, self.agent_names() if "task" in tools else ())
        if intent.agent is not None:
            return await self._delegate(host, intent, prompt)
        if intent.kind == "change" and not self.read_only and "edit" in tools:
            return await self._change(host, intent, prompt)
        if intent.kind == "tour":
            return await self._tour(host, prompt)
        return await self._answer(host, intent, prompt)

    # -- questions --------------------------------------------------------------------------

    async def _answer(self, host: HarnessHost, intent: Intent, prompt: str) -> str | None:
        evidence = await gather_evidence(intent, self.reader, host.run_tools)
        if evidence.empty:
            card = project_card(self.reader)
            body = (
                "Nothing in the project matched the question's terms. What the project is:\n\n"
                + card.render()
            )
        else:
            body = evidence.render()
        return await host.ask(
            prompts.ANSWER,
            f"<evidence>\n{body}\n</evidence>\n\nQuestion: {prompt}",
            max_tokens=ANSWER_MAX_TOKENS,
        )

    async def _tour(self, host: HarnessHost, prompt: str) -> str | None:
        # The README and layout are read here; listing the root makes the look visible as a call.
        await host.run_tools([("ls", {"path": "."})])
        card = project_card(self.reader)
        return await host.ask(
            prompts.TOUR,
            f"<facts>\n{card.render()}\n</facts>\n\nRequest: {prompt}",
            max_tokens=ANSWER_MAX_TOKENS,
        )

    async def _delegate(self, host: HarnessHost, intent: Intent, prompt: str) -> str | None:
        assert intent.agent is not None
        task = re.sub(
            r"(?i)^\s*(?:please\s+)?use\s+the\s+\w+\s+(?:sub-?\s?)?agent\s+(?:to\s+)?", "", prompt
        ).strip()
        words = re.findall(r"[\w.-]+", task)[:5]
        description = " ".join(words) or intent.agent
        (outcome,) = await host.run_tools(
            [("task", {"description": description, "prompt": task or prompt, "subagent_type": intent.agent})]
        )
        # The structured result, not the text: the footer line is for models, not for the user.
        result = outcome.metadata.get("subagent") or {}
        report = str(result.get("summary") or "").strip()
        if outcome.ok and report:
            return report
        # The agent could not run (refused, failed): answer from the evidence instead.
        return await self._answer(host, intent, prompt)

    # -- changes ----------------------------------------------------------------------------

    async def _change(self, host: HarnessHost, intent: Intent, prompt: str) -> str | None:
        rename = _rename_request(prompt)
        if rename is not None:
            return await self._rename(host, *rename)
        command = runnable_test_command(self.reader) if "bash" in host.tool_names() else None
        # The tests the user named fail first and say most; the whole suite must pass at the end.
        named = _selecting(command, intent.failing_tests)
        failure = await self._run_tests(host, named or command)
        # Fixing a failing test means changing the code under test, unless tests are asked for.
        tests_frozen = bool(intent.failing_tests) and not _ASKS_FOR_TESTS.search(prompt)
        if failure is not None and command is not None and (tests_frozen or not intent.failing_tests):
            suspects = self._suspects(intent, failure)
            if suspects:
                return await self._fix_by_rewriting(host, prompt, suspects, failure, command, named)
        notes: list[str] = []
        changed: list[str] = []
        reply = ""
        for attempt in range(EDIT_ATTEMPTS):
            evidence = await self._change_evidence(host, intent, failure)
            request = _edit_request(prompt, evidence, failure, notes, tests_frozen=tests_frozen)
            reply = await host.ask(prompts.EDIT, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt) or ""
            if not reply:
                return None
            blocks = parse_edit_blocks(reply)
            applied, notes = await self._apply_blocks(host, blocks, evidence, tests_frozen=tests_frozen)
            changed.extend(path for path in applied if path not in changed)
            if not applied:
                notes = notes or ["No edit block was found in your reply: write SEARCH/REPLACE blocks."]
                continue
            if command is None:
                return _change_report(changed, reply, None, None)
            failure = await self._run_tests(host, named) if named else None
            if failure is None:
                failure = await self._run_tests(host, command)
            if failure is None:
                return _change_report(changed, reply, command, passed=True)
        return _change_report(changed, reply, command, passed=False if command else None)

    async def _fix_by_rewriting(
        self,
        host: HarnessHost,
        prompt: str,
        suspects: list[FunctionSpan],
        failure: str,
        command: str,
        named: str | None,
    ) -> str | None:
        """Fix failing tests by having the model rewrite one suspect function at a time.

        A rewrite that does not make the tests pass is undone before the next attempt, so attempts
        never pile up on each other.
        """
        tests = self._failing_test_sources(failure)
        notes: list[str] = []
        for attempt in range(EDIT_ATTEMPTS):
            span = suspects[attempt % len(suspects)]
            source = self.reader.read_text(span.path) or ""
            original = span.text(source)
            request = _rewrite_request(prompt, span, original, tests, failure, notes)
            reply = await host.ask(prompts.REWRITE, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
            if reply is None:
                return None
            rewritten = rewritten_function(reply, span, original)
            if rewritten is None:
                notes = [
                    f"Your reply had no complete, valid `def {span.name}` that differs from the current one."
                ]
                continue
            problems: list[str] = []
            if not await self._run_edits(host, [PlannedEdit(span.path, original, rewritten)], problems):
                notes = problems
                continue
            after = await self._run_tests(host, named) if named else None
            if after is None:
                after = await self._run_tests(host, command)
            if after is None:
                return _change_report([span.path], f"Rewrote {span.label}.", command, passed=True)
            await self._run_edits(host, [PlannedEdit(span.path, rewritten, original)], [])
            notes = [
                f"Your version of `{span.name}` did not make the tests pass; it was undone. It failed with:\n"
                + _trim_lines(after, 12)
            ]
        return _change_report([], "", command, passed=False)

    def _suspects(self, intent: Intent, failure: str) -> list[FunctionSpan]:
        """Functions outside the tests the failure points at: traceback frames, then what the tests call."""
        suspects: list[FunctionSpan] = []
        locations = _traceback_locations(failure)
        for path, line in reversed(locations):  # the innermost frame is where it went wrong
            if path.endswith(".py") and not _is_test_path(path):
                span = function_at(path, self.reader.read_text(path) or "", line)
                if span is not None and span not in suspects:
                    suspects.append(span)
        called = set(self._called_in_tests(intent, locations))
        if called:
            for path in project_files(self.reader.root):
                if path.endswith(".py") and not _is_test_path(path):
                    for span in functions_named(path, self.reader.read_text(path) or "", called):
                        if span not in suspects:
                            suspects.append(span)
        return suspects[:3]

    def _failing_test_sources(self, failure: str) -> str:
        """The source of the test functions the failure's traceback names (at most two)."""
        sources: list[str] = []
        for path, line in _traceback_locations(failure):
            if path.endswith(".py") and _is_test_path(path):
                source = self.reader.read_text(path) or ""
                span = function_at(path, source, line)
                if span is not None:
                    text = f"# {path}\n{textwrap.dedent(span.text(source))}"
                    if text not in sources:
                        sources.append(text)
        return "\n".join(sources[:2])

    async def _change_evidence(self, host: HarnessHost, intent: Intent, failure: str | None) -> Evidence:
        """Evidence for an edit: the request's terms, the failure's frames, what the failing tests call."""
        locations = _traceback_locations(failure or "")
        terms = list(intent.terms)
        known = {term.text for term in terms}
        for name in self._called_in_tests(intent, locations):
            if name not in known:
                known.add(name)
                terms.append(SearchTerm(name, 2.0))
        searched = Intent(kind=intent.kind, terms=tuple(terms), failing_tests=intent.failing_tests)
        return await gather_evidence(
            searched, self.reader, host.run_tools, max_lines=110, extra_hits=locations
        )

    def _called_in_tests(self, intent: Intent, locations: list[tuple[str, int]]) -> list[str]:
        """Names the failing tests call: the code under test, which a traceback inside a test omits.

        The tests are the ones the user named (found by their ``def``) and the test frames of the
        failure's traceback.
        """
        places = [(path, line) for path, line in locations if path.endswith(".py") and _is_test_path(path)]
        if intent.failing_tests:
            wanted = re.compile(
                rf"^\s*(?:async\s+)?def\s+(?:{'|'.join(map(re.escape, intent.failing_tests))})\b"
            )
            for path in project_files(self.reader.root):
                if path.endswith(".py") and _is_test_path(path):
                    lines = (self.reader.read_text(path) or "").splitlines()
                    places.extend(
                        (path, number) for number, line in enumerate(lines, 1) if wanted.match(line)
                    )
        names: list[str] = []
        for path, line in places:
            names.extend(called_names(self.reader.read_text(path) or "", line))
        return list(dict.fromkeys(names))[:4]

    async def _run_tests(self, host: HarnessHost, command: str | None) -> str | None:
        """Run the tests; the tail of their output when they fail, None when they pass."""
        if command is None:
            return None
        (outcome,) = await host.run_tools(
            [
                (
                    "bash",
                    {"command": f"set -o pipefail; {command} 2>&1 | tail -n 60", "timeout": TEST_TIMEOUT_S},
                )
            ]
        )
        if outcome.metadata.get("exit_code") == 0 and outcome.ok:
            return None
        return outcome.content[-4000:]

    async def _apply_blocks(
        self, host: HarnessHost, blocks: list[EditBlock], evidence: Evidence, *, tests_frozen: bool
    ) -> tuple[list[str], list[str]]:
        """Apply the blocks through the edit tool; returns the files changed and what went wrong."""
        edits: list[PlannedEdit] = []
        problems: list[str] = []
        pending: dict[str, str] = {}
        for block in blocks:
            path = self._block_path(block, evidence)
            if path is None:
                problems.append(
                    f"{block.path}: no such file in the project, and the SEARCH lines match no file shown."
                )
                continue
            if tests_frozen and _is_test_path(path):
                problems.append(
                    f"{path} is a test: the failing test says what the code must do; change the code."
                )
                continue
            text = pending.get(path, self.reader.read_text(path) or "")
            if not text and not block.search.strip():
                edits.append(PlannedEdit(path, "", block.replace))  # a new file
                pending[path] = block.replace
                continue
            located = locate(block, text) if text else None
            if located is None:
                problems.append(
                    f"{path}: the SEARCH lines were not found exactly once:\n{block.search.rstrip()}"
                )
                continue
            if located.old == located.new:
                problems.append(
                    f"{path}: the REPLACE lines are the same as the SEARCH lines: nothing changes."
                )
                continue
            pending[path] = text.replace(located.old, located.new, 1)
            edits.append(PlannedEdit(path, located.old, located.new))
        applied = await self._run_edits(host, edits, problems)
        return applied, problems

    def _block_path(self, block: EditBlock, evidence: Evidence) -> str | None:
        """The project file a block edits: the path it names, else the one shown file its SEARCH matches.

        Small models copy the format's placeholder path, or leave a directory out; the lines
        they mean to replace say which file they looked at.
        """
        named = self._project_path(block.path)
        if named is not None and (self.reader.read_text(named) is not None or not block.search.strip()):
            return named
        candidates = dict.fromkeys(excerpt.region.path for excerpt in evidence.excerpts)
        matching = [
            path for path in candidates if locate(block, self.reader.read_text(path) or "") is not None
        ]
        return matching[0] if len(matching) == 1 else None

    async def _run_edits(self, host: HarnessHost, edits: list[PlannedEdit], problems: list[str]) -> list[str]:
        """Make ``edits`` in rounds of at most one per file (edits of one file must not race).

        Returns the files changed; what failed is added to ``problems``.
        """
        applied: list[str] = []
        remaining = list(edits)
        while remaining:
            batch: list[PlannedEdit] = []
            later: list[PlannedEdit] = []
            for edit in remaining:
                (later if any(planned.path == edit.path for planned in batch) else batch).append(edit)
            outcomes = await host.run_tools([edit.call() for edit in batch])
            for edit, outcome in zip(batch, outcomes, strict=True):
                if not outcome.ok:
                    problems.append(f"{edit.path}: {outcome.content[:300]}")
                elif edit.path not in applied:
                    applied.append(edit.path)
            remaining = later
        self.reader.forget()
        return applied

    async def _rename(self, host: HarnessHost, old: str, new: str) -> str | None:
        """Rename every whole-word ``old`` to ``new`` in the project's files, then run the tests."""
        pattern = re.compile(rf"\b{re.escape(old)}\b")
        (found,) = await host.run_tools([("grep", {"pattern": pattern.pattern})])
        edits: list[PlannedEdit] = []
        for path, number in found.metadata.get("hits", []):
            lines = (self.reader.read_text(str(path)) or "").splitlines()
            if not 0 < int(number) <= len(lines):
                continue
            line = lines[int(number) - 1]
            edit = PlannedEdit(str(path), line, pattern.sub(new, line), replace_all=True)
            if edit not in edits:
                edits.append(edit)
        if not edits:
            return f"I found no occurrence of `{old}` in the project, so nothing was renamed."
        problems: list[str] = []
        applied = await self._run_edits(host, edits, problems)
        command = runnable_test_command(self.reader) if "bash" in host.tool_names() else None
        failure = await self._run_tests(host, command)
        summary = (
            f"Renamed `{old}` to `{new}` in {len(edits)} lines of {len(applied)} files: {', '.join(applied)}."
        )
        if problems:
            summary += "\nNot changed:\n" + "\n".join(f"- {problem}" for problem in problems)
        if command:
            summary += f"\nTests (`{command}`): " + (
                "pass." if failure is None else f"fail:\n{failure[-1500:]}"
            )
        return summary

    def _project_path(self, path: str) -> str | None:
        """``path`` as the model wrote it, made project-relative; None when it is not a project file."""
        cleaned = path.strip().strip("`'\"").removeprefix("./")
        resolved = self.reader.resolve(cleaned)
        if resolved is None:
            return None
        relative = resolved.relative_to(self.reader.root).as_posix()
        if resolved.is_file() or not resolved.exists():
            return relative
        return None


def _rename_request(prompt: str) -> tuple[str, str] | None:
    """(old, new) when ``prompt`` asks to rename an identifier: the last name before "to", the one after."""
    match = _RENAME.search(prompt)
    if match is None:
        return None
    names = _IDENTIFIER.findall(match.group("before"))
    if not names:
        return None
    old = names[-1].rstrip(".").rsplit(".", 1)[-1]
    new = match.group("new")
    return (old, new) if old and old != new else None


def _is_test_path(path: str) -> bool:
    name = PurePosixPath(path).name
    return (
        name.startswith("test_") or name.endswith("_test.py") or "tests/" in path or path.startswith("test/")
    )


def _traceback_locations(output: str) -> list[tuple[str, int]]:
    """``(path, line)`` of each frame a test run's output names, in order, without repeats."""
    seen: dict[tuple[str, int], None] = {}
    for match in _TRACEBACK_LOCATION.finditer(output):
        path = match.group(1)
        if "site-packages" in path or PurePosixPath(path).is_absolute():
            continue
        seen.setdefault((path, int(match.group(2))), None)
    return list(seen)[:6]


def _rewrite_request(
    prompt: str, span: FunctionSpan, original: str, tests: str, failure: str, notes: list[str]
) -> str:
    """The rewrite step's prompt: the one function, the failing tests, their output, the request."""
    parts = [f'<function file="{span.path}">\n{textwrap.dedent(original).rstrip()}\n</function>']
    if tests:
        parts.append(f"<failing-test>\n{tests.rstrip()}\n</failing-test>")
    parts.append(f"<test-output>\n{_trim_lines(failure, 25)}\n</test-output>")
    if notes:
        parts.append("\n".join(notes))
    parts.append(f"Request: {prompt}\n\nRewrite `{span.name}` so that the failing test passes.")
    return "\n\n".join(parts)


def _selecting(command: str | None, tests: tuple[str, ...]) -> str | None:
    """``command`` narrowed to the named tests (pytest's ``-k``), or None when it cannot be."""
    if command is None or not tests or "pytest" not in command:
        return None
    return f"{command} -k '{' or '.join(tests)}'"


def _edit_request(
    prompt: str, evidence: Evidence, failure: str | None, notes: list[str], *, tests_frozen: bool
) -> str:
    """The edit step's prompt: the code to change, the tests that must pass (when frozen), the failure."""
    if tests_frozen:
        # A small model edits the first code it sees; the failing test is shown apart, as the spec.
        parts = [
            f"<code>\n{evidence.render(numbered=False, paths=lambda path: not _is_test_path(path))}\n</code>",
            "<tests-that-must-pass>\n"
            f"{evidence.render(numbered=False, paths=_is_test_path)}\n</tests-that-must-pass>",
        ]
    else:
        parts = [f"<code>\n{evidence.render(numbered=False)}\n</code>"]
    if failure:
        parts.append(f"<test-output>\n{_trim_lines(failure, 40)}\n</test-output>")
    if notes:
        parts.append("Your previous edit did not work:\n" + "\n".join(f"- {note}" for note in notes[:4]))
    parts.append(f"Request: {prompt}")
    return "\n\n".join(parts)


def _trim_lines(text: str, count: int) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-count:])


def _change_report(changed: list[str], reply: str, command: str | None, passed: bool | None) -> str:
    """What was changed, the model's own sentence about it, and how the tests went."""
    prose = re.sub(r"(?s)<{5,9}\s*SEARCH.*?>{5,9}\s*REPLACE", "", reply)
    sentences = [
        line.strip()
        for line in prose.splitlines()
        if " " in line.strip() and not line.strip().startswith("```")
    ]
    lines = ["Changed " + ", ".join(changed) + "." if changed else "I could not make a working change."]
    if sentences and changed:
        lines.append(" ".join(sentences)[:400])
    if command and passed is not None:
        lines.append(f"Tests (`{command}`): " + ("pass." if passed else "still fail."))
    return "\n".join(lines)
