"""The small-model harness: how an agent on a 1.5B model answers and edits.

A small model loses its way in an open tool loop: it describes calls instead of making them, and
repeats its earlier prose after a tool found the answer. So on the small-model profile nestor does
the steps a small model does badly, and asks the model only for what it does well:

- **questions**: nestor reads the prompt (:mod:`.intent`), searches for its terms and reads the
  best regions with real tool calls (:mod:`.retrieval`), runs the calls the question writes out
  (:mod:`.calls`), then one *answer step* sees only the question and that evidence, never the
  model's earlier prose; what nestor ran, and where the named or cited code is, follow its words
  (:mod:`.facts`);
- **tours**: the model says what the project is from its README; the layout and the test command
  are read from the files and written by nestor (:mod:`.tour`);
- **fixes**: a failing test names suspect functions (its traceback, what it calls); the model
  fills in their statements one at a time (:mod:`.infill`), then rewrites them whole
  (:mod:`.functions`), each version tried with the tests and undone when they still fail;
- **additions**: a new method is written alone and put at the end of its class
  (:mod:`.additions`), then a new test module; a new test that fails inside the new method has
  it fixed as above, and one that then fails on its own code is left out;
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

import ast
import re
import shlex
import tempfile
import textwrap
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from nestor.runtime.features.small import prompts
from nestor.runtime.features.small.additions import (
    Addition,
    class_span,
    exported,
    import_line,
    merged_test_module,
    new_function,
    read_addition,
    uses,
    written_test_module,
)
from nestor.runtime.features.small.calls import QuotedCall, call_script, import_statement, quoted_calls
from nestor.runtime.features.small.defaults import parameter_defaults
from nestor.runtime.features.small.edit_blocks import EditBlock, locate, parse_edit_blocks
from nestor.runtime.features.small.evidence import Evidence
from nestor.runtime.features.small.facts import (
    asks_for_a_default,
    cited_functions,
    is_test_path,
    values,
    where_defined,
)
from nestor.runtime.features.small.functions import (
    FunctionSpan,
    called_names,
    function_at,
    functions_named,
    methods_of,
    parsed,
    rewritten_function,
    without_function,
)
from nestor.runtime.features.small.infill import Gap, candidates, change_size, gaps, parses
from nestor.runtime.features.small.intent import (
    Intent,
    SearchTerm,
    delegated_task,
    looks_like_code,
    question_parts,
    read_intent,
    read_rename,
    search_terms,
)
from nestor.runtime.features.small.project import (
    project_card,
    project_files,
    runnable_test_command,
    user_python,
)
from nestor.runtime.features.small.ranking import term_pattern
from nestor.runtime.features.small.reader import ProjectReader
from nestor.runtime.features.small.retrieval import gather_evidence
from nestor.runtime.features.small.symbols import SymbolIndex, symbol_index
from nestor.runtime.features.small.tour import tour_facts
from nestor.runtime.features.small.trace import ExecutedLines, read_executed_lines, traced_command
from nestor.runtime.kernel.driver import HarnessHost, ToolCall

ANSWER_MAX_TOKENS = 320
TOUR_SUMMARY_MAX_TOKENS = 120
EDIT_MAX_TOKENS = 700
EDIT_ATTEMPTS = 3
INFILL_MAX_TOKENS = 48
INFILL_GAPS_PER_FUNCTION = 16
INFILL_GAPS = 30
MAX_SUSPECTS = 6
CALLED_BONUS = 2.0
"""What a function the failing test calls directly counts above what it mentions of the request."""
NAMED_BONUS = 3.0
CALLEE_BONUS = 1.5
"""What a suspect gains for each function the failing test calls that calls it."""
INFILL_TRIES = 36
INFILL_SAMPLES = 3
TEST_TIMEOUT_S = 180
CALL_TIMEOUT_S = 30
MAX_DROPPED_TESTS = 1
_ASKS_WHERE = re.compile(
    r"\b(?:where(?:'s)?|which\s+(?:file|module|function|method|class|part)|point\s+me|implemented|"
    r"defined|lives?)\b",
    re.IGNORECASE,
)
_TRACEBACK_LOCATION = re.compile(r"^([\w./-]+\.py):(\d+)(?::| in )", re.MULTILINE)
_ASSERTION_FAILED = re.compile(r"^E\s+(?:assert\b|AssertionError\b)", re.MULTILINE)
_ASKS_FOR_TESTS = re.compile(
    r"\b(?:add|write|update|change|fix)\s+(?:a\s+|the\s+|new\s+)*tests?\b|\btests?\s+for\b", re.I
)


@dataclass(frozen=True, slots=True)
class PlannedEdit:
    """One change to make with the ``edit`` tool (``old`` empty: a new file, which ``edit`` creates)."""

    path: str
    old: str
    new: str
    replace_all: bool = False

    def call(self) -> ToolCall:
        """The tool call that makes this edit."""
        arguments: dict[str, object] = {"path": self.path, "old_string": self.old, "new_string": self.new}
        if self.replace_all:
            arguments["replace_all"] = True
        return ("edit", arguments)


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
        symbols = symbol_index(self.reader)
        intent = read_intent(prompt, self.agent_names() if "task" in tools else (), symbols.names())
        if intent.agent is not None:
            return await self._delegate(host, intent, prompt, symbols)
        if intent.kind == "change" and not self.read_only and "edit" in tools:
            return await self._change(host, intent, prompt, symbols)
        if intent.kind == "tour":
            return await self._tour(host, prompt)
        return await self._answer(host, intent, prompt, symbols)

    # -- questions --------------------------------------------------------------------------

    async def _answer(
        self, host: HarnessHost, intent: Intent, prompt: str, symbols: SymbolIndex
    ) -> str | None:
        questions = question_parts(prompt)
        parts = [{term.text for term in search_terms(part, symbols.names())} for part in questions]
        evidence = await gather_evidence(
            intent, self.reader, host.run_tools, symbols=symbols, parts=parts if len(parts) > 1 else ()
        )
        ran = await self._run_quoted_calls(host, prompt)
        default = asks_for_a_default(prompt)
        signature_defaults = parameter_defaults(prompt, intent, symbols, self.reader) if default else ""
        if evidence.empty and not ran:
            card = project_card(self.reader)
            body = (
                "Nothing in the project matched the question's terms. What the project is:\n\n"
                + card.render()
            )
        else:
            body = "\n\n".join(part for part in (evidence.render(), signature_defaults, ran) if part)
        answer = await host.ask(
            prompts.ANSWER,
            f"<evidence>\n{body}\n</evidence>\n\nQuestion: {prompt}",
            max_tokens=ANSWER_MAX_TOKENS,
        )
        if answer is None:
            return None
        # Facts nestor read or ran itself follow the model's words: a small model misreads them.
        facts = [ran, signature_defaults]
        if _ASKS_WHERE.search(prompt):
            facts += [cited_functions(answer, symbols), where_defined(intent, symbols, answer)]
        facts.append(values(answer, intent, symbols, self.reader, default=default))
        return "\n\n".join([answer.strip(), *(fact for fact in facts if fact)])

    async def _run_quoted_calls(self, host: HarnessHost, prompt: str) -> str:
        """Run the calls the question writes out (:mod:`.calls`); what they gave, as evidence."""
        if self.read_only or "bash" not in host.tool_names():
            return ""
        scripts: list[tuple[QuotedCall, str]] = []
        for call in quoted_calls(prompt):
            imports = [import_statement(self.reader, name) for name in call.names]
            if all(found is not None for found in imports):
                scripts.append((call, call_script(call, [found for found in imports if found is not None])))
        if not scripts:
            return ""
        python = user_python()
        commands = [f"{python} -W ignore -c {shlex.quote(script)}" for _, script in scripts]
        outcomes = await host.run_tools(
            [("bash", {"command": command, "timeout": CALL_TIMEOUT_S}) for command in commands]
        )
        rows = [
            f">>> {call.expression}\n{outcome.content.strip()[-400:]}"
            for (call, _), outcome in zip(scripts, outcomes, strict=True)
            if outcome.ok and outcome.metadata.get("exit_code") == 0 and outcome.content.strip()
        ]
        return "Run in the project's Python:\n" + "\n".join(rows) if rows else ""

    async def _tour(self, host: HarnessHost, prompt: str) -> str | None:
        # The README and layout are read here; listing the root makes the look visible as a call.
        await host.run_tools([("ls", {"path": "."})])
        card = project_card(self.reader)
        about = "\n\n".join(
            f"{fact.source}:\n{fact.text}" for fact in (card.description, card.readme) if fact is not None
        )
        summary = await host.ask(
            prompts.TOUR,
            f"<project>\n{about or 'The project has no README and no description.'}\n</project>\n\n"
            f"Request: {prompt}",
            max_tokens=TOUR_SUMMARY_MAX_TOKENS,
        )
        if summary is None:
            return None
        return f"{summary.strip()}\n\n{tour_facts(self.reader)}"

    async def _delegate(
        self, host: HarnessHost, intent: Intent, prompt: str, symbols: SymbolIndex
    ) -> str | None:
        assert intent.agent is not None
        task = delegated_task(prompt)
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
        return await self._answer(host, intent, prompt, symbols)

    # -- changes ----------------------------------------------------------------------------

    async def _change(
        self, host: HarnessHost, intent: Intent, prompt: str, symbols: SymbolIndex
    ) -> str | None:
        rename = read_rename(prompt, self._project_has(symbols))
        if rename is not None:
            return await self._rename(host, *rename)
        command = runnable_test_command(self.reader) if "bash" in host.tool_names() else None
        # The tests the user named fail first and say most; the whole suite must pass at the end.
        named = _selecting(command, intent.failing_tests)
        failure = await self._run_tests(host, named or command)
        addition = read_addition(prompt) if not intent.failing_tests else None
        if addition is not None and (addition.owner is not None or self._module_of(addition, symbols)):
            # Tests failing already cannot judge the new code: then it is added untested.
            added = await self._add(host, addition, prompt, command if failure is None else None, symbols)
            if added is not None:
                return added
        # Fixing a failing test means changing the code under test, unless tests are asked for.
        tests_frozen = bool(intent.failing_tests) and not _ASKS_FOR_TESTS.search(prompt)
        if failure is not None and command is not None and (tests_frozen or not intent.failing_tests):
            executed = await self._trace(host, named or _failing_nodes(command, failure))
            suspects = self._suspects(intent, failure, symbols, executed)
            if suspects:
                fixed = await self._fix_by_infilling(
                    host, suspects, failure, command, named, executed=executed
                )
                if fixed is not None:
                    return fixed
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

    async def _add(
        self, host: HarnessHost, addition: Addition, prompt: str, command: str | None, symbols: SymbolIndex
    ) -> str | None:
        """Add a method, property or function: the model writes it, nestor puts it in place.

        A method goes at the end of its class; a function at the end of its module, and into the
        module's ``__all__`` when it has one. Then, when the request asks for tests, a new test
        module (:meth:`_add_tests`). Returns the report, or None when the class or module is not
        found (the general edit step takes over).
        """
        if addition.owner is not None:
            (found,) = await host.run_tools([("grep", {"pattern": rf"^\s*class\s+{addition.owner}\b"})])
            paths = [str(path) for path, _ in found.metadata.get("hits", []) if not is_test_path(str(path))]
            if not paths:
                return None
            path = paths[0]
        else:
            module = self._module_of(addition, symbols)
            if module is None:
                return None
            await host.run_tools([("view", {"path": module, "limit": 40})])  # the look, as a call
            path = module
        notes: list[str] = []
        for attempt in range(EDIT_ATTEMPTS):
            written = await self._write_member(host, addition, path, prompt, notes, attempt, command=command)
            if written is None:
                return None
            code, problem = written
            if problem is None:
                break
            notes = [problem]
        else:
            return _change_report([], "", command, passed=False if command else None)
        where = f"{addition.owner}.{addition.name}" if addition.owner else addition.name
        report = f"Added the {addition.kind} `{where}` to {path}."
        if re.search(r"\btests?\b", prompt, re.I):
            return report + "\n" + await self._add_tests(host, addition, path, code, prompt, command)
        return report + (f"\nTests (`{command}`): pass." if command else "")

    async def _write_member(
        self,
        host: HarnessHost,
        addition: Addition,
        path: str,
        prompt: str,
        notes: list[str],
        attempt: int,
        *,
        command: str | None = None,
    ) -> tuple[str, str | None] | None:
        """Have the model write the new member and put it at the end of its class.

        A version already there (one a test showed wrong) is shown and replaced. With a
        ``command``, the tests run after, and a change they fail is undone.

        Returns:
            The code written and what went wrong (None when it is in place), or None when the
            run was stopped or the class is gone.

        """
        source = self.reader.read_text(path) or ""
        span = class_span(source, addition.owner) if addition.owner else (1, _module_end(source))
        if span is None:
            return None
        owner_text = "".join(source.splitlines(keepends=True)[span[0] - 1 : span[1]])
        current = functions_named(path, owner_text, {addition.name})
        # A version that failed a test is shown, and replaced.
        owner_text_without = without_function(owner_text, current[0]) if current else owner_text
        request = _addition_request(path, owner_text, addition, prompt, notes)
        reply = await host.ask(prompts.ADD, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
        if reply is None:
            return None
        code = new_function(reply, addition.name)
        if code is None:
            return "", f"Your reply had no complete, valid `def {addition.name}`."
        if addition.kind == "property" and "@property" not in code:
            code = "@property\n" + code
        body = owner_text_without.rstrip("\n")
        indent = _body_indent(owner_text) if addition.owner else ""
        member = textwrap.indent(code, indent, lambda line: bool(line.strip()))
        blank = "\n\n" if addition.owner else "\n\n\n"
        extended = f"{body}{blank}{member.rstrip()}" + (owner_text[len(owner_text.rstrip("\n")) :] or "\n")
        if addition.owner is None:
            extended = exported(extended, addition.name) or extended
        problems: list[str] = []
        if not await self._run_edits(host, [PlannedEdit(path, owner_text, extended)], problems):
            return code, "; ".join(problems)
        failure = await self._run_tests(host, command) if command else None
        if failure is None:
            return code, None
        await self._run_edits(host, [PlannedEdit(path, extended, owner_text)], [])
        return code, f"With your `{addition.name}` the tests failed; it was undone:\n" + _trim_lines(
            failure, 15
        )

    async def _add_tests(
        self, host: HarnessHost, addition: Addition, path: str, code: str, prompt: str, command: str | None
    ) -> str:
        """Have the model write a test module for the new code; kept only if the tests pass with it.

        A test that fails inside the new code shows the code wrong, not the test: then the model
        writes the code again, shown the failure.
        """
        name = addition.owner or addition.name
        # A test module the request names is where the tests go: its fixtures and helpers with them.
        existing_path = self._named_test_module(prompt)
        existing = self.reader.read_text(existing_path) if existing_path else None
        if existing_path is not None and existing is not None:
            example, target = existing_path, existing_path
        else:
            existing = None
            (found,) = await host.run_tools([("grep", {"pattern": rf"^\s*(from|import)\s.*\b{name}\b"})])
            examples = [str(path) for path, _ in found.metadata.get("hits", []) if is_test_path(str(path))]
            example = examples[0] if examples else None
            directory = str(PurePosixPath(example).parent) if example else "tests"
            target = f"{directory}/test_{addition.name.lstrip('_')}.py"
            if self.reader.read_text(target) is not None:
                target = f"{directory}/test_{addition.name.lstrip('_')}_added.py"
        notes: list[str] = []
        for attempt in range(EDIT_ATTEMPTS):
            request = _test_request(
                self.reader, example, path, code, addition, prompt, notes, appending=existing is not None
            )
            reply = await host.ask(prompts.ADD_TEST, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
            if reply is None:
                break
            module = written_test_module(reply)
            if module is None:
                notes = ["Your reply had no valid Python module with test functions."]
                continue
            if not uses(module, addition.name):
                # A copy of the example passes and tests nothing new (found blind on itsdangerous).
                notes = [f"Your tests never used `{addition.name}`: each test must call it."]
                continue
            written = module if existing is None else merged_test_module(existing, module)
            new_tests = set(_test_names(written)) - set(_test_names(existing or ""))
            problems: list[str] = []
            if not await self._run_edits(host, [PlannedEdit(target, existing or "", written)], problems):
                return f"I could not write {target}: " + "; ".join(problems)
            failure = await self._run_tests(host, command)
            if failure is not None and command and self._fails_inside(failure, path, addition.name):
                # Fixed like any failing code: statement by statement, then written again whole.
                # A version that moves the failure into the test's own lines is the fix the test
                # needed to show its own bug (it sorts Items too, say): that test goes next.
                members = functions_named(path, self.reader.read_text(path) or "", {addition.name})

                def settles(after: str | None) -> bool:
                    return after is None or _broken_test(after, target) is not None

                if await self._fix_by_infilling(host, members, failure, command, None, settles) is not None:
                    failure = await self._run_tests(host, command)
                else:
                    note = f"Your `{addition.name}` failed this test:\n" + _trim_lines(failure, 15)
                    rewritten = await self._write_member(
                        host, addition, path, prompt, [note], attempt + 1, command=None
                    )
                    if rewritten is not None and rewritten[1] is None:
                        code = rewritten[0]
                        failure = await self._run_tests(host, command)
            dropped: list[str] = []
            while failure is not None and command and len(dropped) < MAX_DROPPED_TESTS:
                broken = _broken_test(failure, target)
                if broken not in new_tests or not await self._drop_test(host, target, broken):
                    break
                dropped.append(broken)
                failure = await self._run_tests(host, command)
            if failure is None:
                report = f"Added tests in {target}."
                if dropped:
                    names = ", ".join(f"`{name}`" for name in dropped)
                    report += f" I left out {names}: it failed in its own code, not in `{addition.name}`."
                return report + (f"\nTests (`{command}`): pass." if command else "")
            notes = [f"Your test module failed:\n{_trim_lines(failure, 15)}"]
            if existing is None:
                await host.run_tools([("bash", {"command": f"rm -f -- {shlex.quote(target)}"})])
            else:
                await self._run_edits(
                    host, [PlannedEdit(target, self.reader.read_text(target) or "", existing)], []
                )
            self.reader.forget()
        return "I could not write a test for it that passes, so I added none." + (
            f"\nTests (`{command}`): pass." if command else ""
        )

    def _module_of(self, addition: Addition, symbols: SymbolIndex) -> str | None:
        """The module file a new function goes in: one the request names (``dicttoolz``), not a test."""
        if addition.owner is not None or addition.kind != "function":
            return None
        for word in addition.modules:
            paths = [
                symbol.path
                for symbol in symbols.definitions(word)
                if symbol.kind == "module" and not is_test_path(symbol.path) and symbol.path.endswith(".py")
            ]
            if len(paths) == 1:
                return paths[0]
        return None

    def _named_test_module(self, prompt: str) -> str | None:
        """An existing test module the prompt names (``tests/test_timed.py``, ``test_dicttoolz.py``)."""
        for term in search_terms(prompt):
            if not term.is_file or not term.text.endswith(".py"):
                continue
            found = [path for path in project_files(self.reader.root) if path.endswith(term.text)]
            exact = [path for path in found if path == term.text or path.endswith("/" + term.text)]
            if len(exact) == 1 and is_test_path(exact[0]):
                return exact[0]
        return None

    async def _drop_test(self, host: HarnessHost, module: str, name: str) -> bool:
        """Take the test function ``name`` out of ``module``, unless it is the module's only test."""
        source = self.reader.read_text(module) or ""
        spans = functions_named(module, source, {name})
        others = [
            node.name
            for node in parsed(source).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")
            and node.name != name
        ]
        if len(spans) != 1 or not others:
            return False
        kept = without_function(source, spans[0])
        return bool(await self._run_edits(host, [PlannedEdit(module, source, kept)], []))

    def _fails_inside(self, failure: str, path: str, name: str) -> bool:
        """Whether a traceback of ``failure`` passes through the function ``name`` of ``path``."""
        spans = functions_named(path, self.reader.read_text(path) or "", {name})
        return any(
            frame == path and span.start <= line <= span.end
            for frame, line in _traceback_locations(failure)
            for span in spans
        )

    async def _fix_by_infilling(
        self,
        host: HarnessHost,
        suspects: list[FunctionSpan],
        failure: str,
        command: str,
        named: str | None,
        settles: Callable[[str | None], bool] = lambda failure: failure is None,
        *,
        executed: ExecutedLines | None = None,
    ) -> str | None:
        """Fix failing tests by having the model fill in one statement of a suspect at a time.

        Each version the model writes is tried with the tests and undone unless the tests' outcome
        ``settles`` it (by default: they pass). Returns the report of the fix, or None when none
        was found (or the model cannot fill in).
        """
        frames = _traceback_locations(failure)
        asked = tried = 0
        for span in suspects:
            source = self.reader.read_text(span.path) or ""
            first_lines = [line for path, line in frames if path == span.path]
            ran = (lambda line, path=span.path: executed.ran(path, line)) if executed is not None else None
            for gap in gaps(source, span, first_lines, ran)[:INFILL_GAPS_PER_FUNCTION]:
                if asked >= INFILL_GAPS or tried >= INFILL_TRIES:
                    return None
                trial = _GapTrial(span, gap, source, command, named, settles)
                middle = await host.infill(*gap.context(source), max_tokens=INFILL_MAX_TOKENS)
                if middle is None:
                    return None
                asked += 1
                for candidate in candidates(middle, trial.cut):
                    if not trial.parses(candidate):
                        continue
                    tried += 1
                    if await self._passes(host, trial, candidate):
                        best = await self._smallest_passing(host, trial, candidate)
                        change = f"In {span.label}, `{trial.cut.strip()}` is now `{best.strip()}`."
                        return _change_report([span.path], change, command, passed=True)
        return None

    async def _passes(self, host: HarnessHost, trial: _GapTrial, candidate: str) -> bool:
        """Put ``candidate`` in the trial's gap and run the tests; it stays only if they pass."""
        if not await self._run_edits(host, [trial.edit(candidate)], []):
            return False
        failure = await self._run_tests(host, trial.named) if trial.named else None
        if failure is None:
            failure = await self._run_tests(host, trial.command)
        if trial.settles(failure):
            return True
        await self._run_edits(host, [trial.edit(candidate, undo=True)], [])
        return False

    async def _smallest_passing(self, host: HarnessHost, trial: _GapTrial, passing: str) -> str:
        """Of ``passing`` (in place) and what more samples of the gap pass, the smallest change.

        Tests pass with many changes, some of them wrong for the cases the tests leave out
        (``a > b`` made ``a == b`` where ``a >= b`` was meant); the smallest is likeliest right.
        """
        best = passing
        for attempt in range(1, INFILL_SAMPLES):
            context = trial.gap.context(trial.source)
            middle = await host.infill(*context, max_tokens=INFILL_MAX_TOKENS, attempt=attempt)
            if middle is None:
                break
            for candidate in candidates(middle, trial.cut):
                smaller = change_size(candidate, trial.cut) < change_size(best, trial.cut)
                if not smaller or not trial.parses(candidate):
                    continue
                await self._run_edits(host, [trial.edit(best, undo=True)], [])
                if await self._passes(host, trial, candidate):
                    best = candidate
                else:
                    await self._run_edits(host, [trial.edit(best)], [])
        return best

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

    def _suspects(
        self, intent: Intent, failure: str, symbols: SymbolIndex, executed: ExecutedLines | None = None
    ) -> list[FunctionSpan]:
        """Functions outside the tests that may hold the bug, likeliest first.

        The traceback's frames come first, innermost first. Then the functions the failing tests
        call, the methods of the classes they make and, when the failing run was traced, every
        function of the project it ran, ordered by how much of the request they mention (the
        functions the tests call directly count more); a function it did not run is no suspect.
        """
        suspects: list[FunctionSpan] = []
        locations = _traceback_locations(failure)
        for path, line in reversed(locations):  # the innermost frame is where it went wrong
            if path.endswith(".py") and not is_test_path(path):
                span = function_at(path, self.reader.read_text(path) or "", line)
                if span is not None and span not in suspects:
                    suspects.append(span)
        called = set(self._called_in_tests(intent, locations))
        others: list[FunctionSpan] = []
        if called:
            functions: list[FunctionSpan] = []
            methods: list[FunctionSpan] = []  # of the classes the tests make: the code under test
            for path in project_files(self.reader.root):
                if path.endswith(".py") and not is_test_path(path):
                    source = self.reader.read_text(path) or ""
                    functions.extend(functions_named(path, source, called))
                    methods.extend(methods_of(path, source, called))
            others.extend(span for span in [*functions, *methods] if span not in suspects)
        if executed is not None:
            others = [span for span in others if executed.ran_any(span.path, span.start, span.end)]
            others.extend(
                span
                for span in _functions_ran(symbols, executed)
                if span not in suspects and span not in others and not is_test_path(span.path)
            )
            likelihood = _suspicion(intent, self.reader, called, others)
            others.sort(key=lambda span: -likelihood(span))
        suspects.extend(span for span in others if span not in suspects)
        return suspects[:MAX_SUSPECTS]

    async def _trace(self, host: HarnessHost, command: str | None) -> ExecutedLines | None:
        """Run ``command`` (the failing tests) once more with the line tracer (see :mod:`.trace`)."""
        if command is None or "pytest" not in command:
            return None
        directory = f"{tempfile.gettempdir()}/nestor-trace-{uuid.uuid4().hex[:12]}"
        (outcome,) = await host.run_tools(
            [
                (
                    "bash",
                    {
                        "command": f"{traced_command(command, directory)}; rm -rf {shlex.quote(directory)}",
                        "timeout": TEST_TIMEOUT_S,
                    },
                )
            ]
        )
        return read_executed_lines(outcome.content) if outcome.ok else None

    def _failing_test_sources(self, failure: str) -> str:
        """The source of the test functions the failure's traceback names (at most two)."""
        sources: list[str] = []
        for path, line in _traceback_locations(failure):
            if path.endswith(".py") and is_test_path(path):
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
        places = [(path, line) for path, line in locations if path.endswith(".py") and is_test_path(path)]
        if intent.failing_tests:
            wanted = re.compile(
                rf"^\s*(?:async\s+)?def\s+(?:{'|'.join(map(re.escape, intent.failing_tests))})\b"
            )
            for path in project_files(self.reader.root):
                if path.endswith(".py") and is_test_path(path):
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
            if tests_frozen and is_test_path(path):
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

    def _project_has(self, symbols: SymbolIndex) -> Callable[[str], bool]:
        """A test of whether the project has a name.

        It has it when it defines it in Python, or when a file has it as a code-like word
        (``snake_case``, ``CamelCase``).
        """

        def has(name: str) -> bool:
            if name in symbols:
                return True
            if not looks_like_code(name):
                return False
            word = re.compile(rf"\b{re.escape(name)}\b")
            files = project_files(self.reader.root)
            return any(word.search(self.reader.read_text(path) or "") for path in files)

        return has

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


@dataclass(frozen=True, slots=True)
class _GapTrial:
    """One gap of a suspect whose versions are tried with the tests (see ``_fix_by_infilling``)."""

    span: FunctionSpan
    gap: Gap
    source: str
    command: str
    named: str | None
    settles: Callable[[str | None], bool]

    @property
    def cut(self) -> str:
        """The gap's lines as they are."""
        return self.gap.cut(self.source)

    def edit(self, candidate: str, *, undo: bool = False) -> PlannedEdit:
        """The edit that puts ``candidate`` in the gap (or, with ``undo``, takes it out again)."""
        original, changed = self.span.text(self.source), self.gap.filled(self.source, candidate)
        return (
            PlannedEdit(self.span.path, changed, original)
            if undo
            else PlannedEdit(self.span.path, original, changed)
        )

    def parses(self, candidate: str) -> bool:
        """Whether the file is valid Python with ``candidate`` in the gap."""
        edit = self.edit(candidate)
        return parses(self.source.replace(edit.old, edit.new, 1))


def _functions_ran(symbols: SymbolIndex, executed: ExecutedLines) -> list[FunctionSpan]:
    """The project's functions and methods a traced run ran (their body, not just their ``def``)."""
    found: list[FunctionSpan] = []
    for path, lines in executed.by_file.items():
        for symbol in symbols.in_file(path):
            if symbol.kind in ("function", "method") and any(symbol.line < n <= symbol.end for n in lines):
                found.append(FunctionSpan(path, symbol.name, symbol.line, symbol.end))
    return found


def _suspicion(
    intent: Intent, reader: ProjectReader, called: set[str], candidates: list[FunctionSpan]
) -> Callable[[FunctionSpan], float]:
    """How likely a function the failing test ran holds the bug, by what the request says of it.

    A function the test calls directly, or that the request names, counts most; then one those
    functions call themselves (one step down: "the salt I pass to dumps() gets ignored" is lost in
    the ``make_signer(salt)`` that ``dumps`` calls); then how often it has the request's words
    (up to three times each). A function that merely calls a name the request wrote (an
    ``is_text_serializer`` that calls ``dumps``) gains nothing by it.
    """
    names = {term.text for term in intent.terms if term.exact}
    words = [
        (term.weight, re.compile(term_pattern(term)))
        for term in intent.terms
        if term.prose and not term.exact
    ]
    callees: dict[str, int] = {}
    for span in candidates:
        if span.name in called:
            source = reader.read_text(span.path) or ""
            for name in set(called_names(source, span.start)):
                callees[name] = callees.get(name, 0) + 1

    def likelihood(span: FunctionSpan) -> float:
        text = span.text(reader.read_text(span.path) or "")
        score = CALLED_BONUS * (span.name in called) + NAMED_BONUS * (span.name in names)
        score += CALLEE_BONUS * callees.get(span.name, 0)
        return score + sum(weight * min(3, len(pattern.findall(text))) for weight, pattern in words)

    return likelihood


def _failing_nodes(command: str, failure: str) -> str | None:
    """``command`` narrowed to the tests the failure's summary names (``FAILED path::test``)."""
    nodes = list(dict.fromkeys(re.findall(r"^FAILED (\S+::\S+)", failure, re.MULTILINE)))
    if not nodes or "pytest" not in command:
        return None
    return f"{command} " + " ".join(shlex.quote(node.split(" - ")[0]) for node in nodes[:5])


def _broken_test(failure: str, module: str) -> str | None:
    """The test of ``module`` that failed on an error in its own lines, if that is the failure.

    An assertion that fails says the code under test gave the wrong result; an exception raised
    by the test's own lines (``sorted()`` of objects that do not order) says the test is wrong.
    """
    frames = _traceback_locations(failure)
    if not frames or frames[-1][0] != module or _ASSERTION_FAILED.search(failure):
        return None
    match = re.search(rf"^FAILED {re.escape(module)}::(\w+)", failure, re.MULTILINE)
    return match.group(1) if match else None


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


def _addition_request(path: str, owner: str, addition: Addition, prompt: str, notes: list[str]) -> str:
    """The add step's prompt: the class the new code goes in, then the request."""
    lines = owner.splitlines()
    if len(lines) > 160:  # the class's start (its attributes and __init__) and its end
        lines = [*lines[:60], "    ...", *lines[-90:]]
    parts = [f'<code file="{path}">\n' + "\n".join(lines) + "\n</code>"]
    if notes:
        parts.append("\n".join(notes))
    container = f"class {addition.owner}" if addition.owner else f"module {path}"
    what = f"the {addition.kind} `{addition.name}` of {container}"
    parts.append(f"Request: {prompt}\n\nWrite {what}, and nothing else.")
    return "\n\n".join(parts)


def _test_request(
    reader: ProjectReader,
    example: str | None,
    path: str,
    code: str,
    addition: Addition,
    prompt: str,
    notes: list[str],
    *,
    appending: bool = False,
) -> str:
    """The test step's prompt: the new code, how to import it, an example test module, the request.

    With ``appending``, the example is the module the new tests go at the end of, shown longer.
    """
    parts = [f'<new-code file="{path}">\n{code.rstrip()}\n</new-code>']
    if (line := import_line(path, addition.owner or addition.name)) is not None:
        parts.append(f"Import it with: {line}")
    if example is not None:
        shown = (reader.read_text(example) or "").splitlines()[: 120 if appending else 40]
        head = "\n".join(shown)
        parts.append(f'<example-test file="{example}">\n{head}\n</example-test>')
        if appending:
            parts.append(
                "Your tests go at the end of this module: use its imports, fixtures and helper classes."
            )
        conftest = str(PurePosixPath(example).parent / "conftest.py")
        if fixtures := reader.read_text(conftest):
            shown = "\n".join(fixtures.splitlines()[:40])
            parts.append(
                f'<fixtures file="{conftest}">\n{shown}\n</fixtures>\n'
                "(pytest gives these fixtures to any test that names them as an argument.)"
            )
    if notes:
        parts.append("\n".join(notes))
    parts.append(f"Request: {prompt}\n\nWrite the test module for `{addition.name}`.")
    return "\n\n".join(parts)


def _module_end(source: str) -> int:
    """The last line of a module's code before its ``if __name__ == "__main__":`` block, if any."""
    lines = source.splitlines()
    for number, line in enumerate(lines, 1):
        if re.match(r"""if\s+__name__\s*==\s*['"]__main__['"]\s*:""", line):
            return max(1, number - 1)
    return max(1, len(lines))


def _test_names(module: str) -> list[str]:
    """The test functions (and test methods) of ``module``."""
    return [
        node.name
        for node in ast.walk(parsed(module))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]


def _body_indent(owner: str) -> str:
    """The indentation of a class's body (four spaces when it cannot be read)."""
    for line in owner.splitlines()[1:]:
        if line.strip():
            return line[: len(line) - len(line.lstrip())] or "    "
    return "    "


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
            f"<code>\n{evidence.render(numbered=False, paths=lambda path: not is_test_path(path))}\n</code>",
            "<tests-that-must-pass>\n"
            f"{evidence.render(numbered=False, paths=is_test_path)}\n</tests-that-must-pass>",
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
