"""The small-model harness: how an agent on a 1.5B model answers and edits.

A small model loses its way in an open tool loop: it describes calls instead of making them, and
repeats its earlier prose after a tool found the answer. So on the small-model profile nestor does
the steps a small model does badly, and asks the model only for what it does well. Each request
goes through the same stages, each a sub-package, each step a function of the turn's
:class:`~.workspace.Workspace` (the agent, the project's files, edits and test runs):

- **understand** (:mod:`.understanding`): what the prompt asks (:mod:`~.understanding.intent`,
  :mod:`~.understanding.asks`), what it must not do (a refusal), and for a change which files it
  allows (:mod:`~.understanding.scope`);
- **gather** (:mod:`.gathering`): searches and reads as real tool calls (retrieval), the
  project's names and code in every language with a grammar (the symbol and code indexes), the
  calls a question writes out, run; the suspects of a failing test;
- **act** (:mod:`.acting`): the answer step over the evidence (and the earlier exchange for a
  follow-up), nestor's own answers where the code or git says it exactly (callers, covering
  tests, members, every place, history), the tour, and the changes: a rename, a documentation
  edit, an addition, a fix filled in line by line, or SEARCH/REPLACE edit blocks;
- **verify** (:mod:`.verifying`): every file a change touched is kept before its first edit; the
  change holds when each file still parses and the project's tests pass (or fail no more than
  before); else, or when the run stops half-way, every file is put back as it was;
- **report**: what was changed and how the tests went, or what was tried and what failed.

Every search, read, edit, command and sub-agent is a real tool call through the agent, so
permissions, events and the stored session see them as usual.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from nestor.runtime.features.small.acting.adding import add, module_of
from nestor.runtime.features.small.acting.appended_tests import append_tests, tested_definition
from nestor.runtime.features.small.acting.appending import append, appended_file
from nestor.runtime.features.small.acting.documenting import asks_for_documentation, document
from nestor.runtime.features.small.acting.edits import edit_with_blocks
from nestor.runtime.features.small.acting.fixes import fix_by_infilling, fix_by_rewriting
from nestor.runtime.features.small.acting.history import history_answer
from nestor.runtime.features.small.acting.listing import list_places
from nestor.runtime.features.small.acting.lookups import callers_answer, covers_answer, members_answer
from nestor.runtime.features.small.acting.new_tests import add_tests, tested_code
from nestor.runtime.features.small.acting.questions import answer
from nestor.runtime.features.small.acting.rename import project_has, rename
from nestor.runtime.features.small.acting.rewriting import rewrite_function, rewrite_target
from nestor.runtime.features.small.acting.running_tests import tests_answer
from nestor.runtime.features.small.acting.tour import tour
from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.project import project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.suspects import code_suspects, suspects, trace
from nestor.runtime.features.small.gathering.symbols import SymbolIndex, symbol_index
from nestor.runtime.features.small.understanding.additions import asks_for_tests_of_code, read_addition
from nestor.runtime.features.small.understanding.asks import ask_kind, refusal
from nestor.runtime.features.small.understanding.intent import (
    Intent,
    asks_to_commit,
    delegated_task,
    read_intent,
    read_rename,
)
from nestor.runtime.features.small.understanding.scope import read_scope
from nestor.runtime.features.small.verifying.test_command import runnable_test_command
from nestor.runtime.features.small.verifying.verdict import change_problem
from nestor.runtime.features.small.workspace import Workspace, undone_report
from nestor.runtime.kernel.driver import HarnessHost

NO_COMMIT = (
    "I did not make the commit: nestor leaves commits to you (a commit runs the repository's own "
    "hooks). A message for the uncommitted changes, to use with `git commit -a`:"
)
COMMIT_MESSAGE_REQUEST = (
    "Write a commit message for the uncommitted changes: a short first line, then a sentence."
)
_FIX_REQUEST = re.compile(
    r"\b(?:fix(?:es|ed)?|bug(?:gy|s)?|broken|fails?|failing|repair|regression|crash(?:es)?)\b", re.IGNORECASE
)


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
        work = Workspace.of(host, self.reader)
        if (reason := refusal(prompt)) is not None:
            return reason  # nothing is read, run or changed for it
        symbols = symbol_index(self.reader)
        intent = read_intent(prompt, self.agent_names() if "task" in tools else (), symbols.names())
        if intent.agent is not None:
            return await self._delegate(work, intent, prompt, symbols)
        if intent.kind == "change" and not self.read_only and "edit" in tools:
            return await _change(work, intent, prompt, symbols)
        if intent.kind == "tour":
            return await tour(work, prompt)
        return await self._question(work, intent, prompt, symbols)

    async def _question(
        self, work: Workspace, intent: Intent, prompt: str, symbols: SymbolIndex
    ) -> str | None:
        """A question: nestor's own answer when the code or git says it exactly, else the answer step."""
        ask = ask_kind(prompt)
        if asks_to_commit(prompt):
            # A commit runs the repository's hooks; nestor's own git makes none: a message to use.
            message = await history_answer(work, COMMIT_MESSAGE_REQUEST)
            return None if message is None else f"{NO_COMMIT}\n\n{message}"
        if ask == "history":
            return await history_answer(work, prompt)
        if ask == "tests" and "bash" in work.host.tool_names():
            ran = await tests_answer(work)
            if ran is not None:
                return ran
        if ask != "general":
            index = code_index(self.reader)
            exact = {
                "callers": callers_answer,
                "covers": covers_answer,
                "members": members_answer,
            }.get(ask, lambda *_: None)(prompt, intent, index)
            if exact is None and ask in ("list", "members"):
                exact = await list_places(work, prompt, intent, index)
            if exact is not None:
                return exact
        earlier = work.host.earlier_exchanges()
        return await answer(work, intent, prompt, symbols, read_only=self.read_only, earlier=earlier[-1:])

    async def _delegate(
        self, work: Workspace, intent: Intent, prompt: str, symbols: SymbolIndex
    ) -> str | None:
        assert intent.agent is not None
        task = delegated_task(prompt)
        words = re.findall(r"[\w.-]+", task)[:5]
        description = " ".join(words) or intent.agent
        (outcome,) = await work.host.run_tools(
            [("task", {"description": description, "prompt": task or prompt, "subagent_type": intent.agent})]
        )
        # The structured result, not the text: the footer line is for models, not for the user.
        result = outcome.metadata.get("subagent") or {}
        report = str(result.get("summary") or "").strip()
        if outcome.ok and report:
            return report
        # The agent could not run (refused, failed): answer from the evidence instead.
        return await answer(work, intent, prompt, symbols, read_only=self.read_only)


async def _change(work: Workspace, intent: Intent, prompt: str, symbols: SymbolIndex) -> str | None:
    """A change request, made within the files it allows, verified, and undone when it does not hold."""
    reader = work.reader
    renamed = read_rename(prompt, project_has(reader, symbols))
    fixing = bool(intent.failing_tests) or bool(_FIX_REQUEST.search(prompt))
    scope = read_scope(
        prompt,
        project_files(reader.root),
        fixing=fixing,
        renaming=renamed is not None,
        defines=lambda name: [symbol.path for symbol in symbols.definitions(name) if symbol.kind != "module"],
        names=[term.text for term in intent.terms if term.exact and not term.prose],
    )
    work = replace(work, scope=scope)
    command = runnable_test_command(reader) if "bash" in work.host.tool_names() else None
    # The tests the user named fail first and say most; the whole suite must pass at the end.
    named = _selecting(command, intent.failing_tests)
    untested = ""
    try:
        failure = await work.run_tests(named or command)
        if (missing := work.missing_runners.get(named or command or "")) is not None:
            # Its failure says nothing of the code: the change is checked as without tests, and said so.
            ran = named or command
            untested = f"The tests could not run here (`{ran}`: {missing}), so the change is not tested."
            command = named = failure = None
        report = await _changed(work, intent, prompt, symbols, renamed, command, named, failure)
        if report is None:  # a budget stopped the run part-way: nothing half-done stays
            work.restore()
            return None
        problem = await change_problem(
            work.snapshot,
            reader.read_text,
            work.run_tests,
            command,
            None if named else failure,
            fixing=fixing and failure is not None,
        )
    except BaseException:  # cancelled (the time budget, Ctrl-C) or failed half-way: undone too
        work.restore()
        raise
    if problem is None:
        return f"{report}\n{untested}" if untested else report
    work.restore()
    return undone_report(report, problem)


async def _changed(
    work: Workspace,
    intent: Intent,
    prompt: str,
    symbols: SymbolIndex,
    renamed: tuple[str, str] | None,
    command: str | None,
    named: str | None,
    failure: str | None,
) -> str | None:
    """The change step for the request's kind, else edit blocks.

    The kinds: a rename, a comment, text at the end of a file, an addition, tests of existing
    code, a fix.
    """
    if renamed is not None:
        return await rename(work, *renamed)
    if asks_for_documentation(prompt):
        documented = await document(work, prompt, intent, code_index(work.reader))
        if documented is not None:
            return documented
    appended = appended_file(prompt, intent, work) if failure is None else None
    if appended is not None:
        return await append(work, appended, prompt)
    addition = read_addition(prompt) if not intent.failing_tests else None
    if addition is not None and (addition.owner is not None or module_of(addition, symbols)):
        # Tests failing already cannot judge the new code: then it is added untested.
        added = await add(work, addition, prompt, command if failure is None else None, symbols)
        if added is not None:
            return added
    if addition is None and failure is None and command is not None and asks_for_tests_of_code(prompt):
        # Tests of code that exists (the request adds none): the model writes them, the code stays.
        tested = tested_code(work.reader, intent, symbols) if "pytest" in command else None
        if tested is not None:
            return await add_tests(work, *tested, prompt, command, fix_code=False)
        appended = tested_definition(intent, code_index(work.reader)) if "pytest" not in command else None
        if appended is not None:
            return await append_tests(work, *appended, prompt, command)
    # Fixing a failing test means changing the code under test, unless tests are asked for.
    if failure is not None and command is not None and (not work.scope.tests or not intent.failing_tests):
        if "pytest" in command:
            executed = await trace(work, named or _failing_nodes(command, failure))
            found = suspects(work.reader, intent, failure, symbols, executed)
            if found:
                fixed = await fix_by_infilling(
                    work, found, failure, command, named, executed=executed, repairs_first=executed is None
                )
                if fixed is not None:
                    return fixed
                return await fix_by_rewriting(work, prompt, found, failure, command, named)
        else:  # another language: suspects from the code index, filled in line by line
            found = code_suspects(work.reader, code_index(work.reader), intent, failure, prompt)
            allowed = [span for span in found if work.scope.allows(span.path, exists=True)]
            fixed = (
                await fix_by_infilling(
                    work, allowed, failure, command, named, interleave=True, repairs_first=True
                )
                if allowed
                else None
            )
            if fixed is not None:
                return fixed
    if addition is None and failure is None and (target := rewrite_target(intent, prompt, work)) is not None:
        # One function the request names, nothing failing: the model writes it again, whole.
        return await rewrite_function(work, target, prompt, command)
    return await edit_with_blocks(work, intent, prompt, failure, command, named)


def _failing_nodes(command: str, failure: str) -> str | None:
    """``command`` narrowed to the tests the failure's summary names (``FAILED path::test``)."""
    nodes = list(dict.fromkeys(re.findall(r"^FAILED (\S+::\S+)", failure, re.MULTILINE)))
    if not nodes or "pytest" not in command:
        return None
    return f"{command} " + " ".join(shlex.quote(node.split(" - ")[0]) for node in nodes[:5])


def _selecting(command: str | None, tests: tuple[str, ...]) -> str | None:
    """``command`` narrowed to the named tests (pytest's ``-k``), or None when it cannot be."""
    if command is None or not tests or "pytest" not in command:
        return None
    return f"{command} -k '{' or '.join(tests)}'"
