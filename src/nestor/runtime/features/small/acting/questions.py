"""Answering a question: evidence gathered by nestor, one answer step, then the facts nestor read.

nestor searches for the question's terms and reads the best regions with real tool calls
(:mod:`.retrieval`), runs the calls the question writes out (:mod:`.calls`), then one answer step
sees only the question and that evidence, never the model's earlier prose; what nestor ran, and
where the named or cited code is, follow its words (:mod:`.facts`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import replace

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.gathering.calls import (
    MAX_CALLS,
    call_script,
    called_names,
    example_calls,
    example_values,
    import_statement,
    quoted_calls,
)
from nestor.runtime.features.small.gathering.code_index import code_index
from nestor.runtime.features.small.gathering.defaults import parameter_defaults
from nestor.runtime.features.small.gathering.facts import (
    asks_for_a_default,
    cited_functions,
    raised,
    values,
    where_defined,
)
from nestor.runtime.features.small.gathering.messages import message_sources, quoted_message
from nestor.runtime.features.small.gathering.node_calls import node_calls
from nestor.runtime.features.small.gathering.project import is_test_path, project_card, user_python
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.retrieval import gather_evidence
from nestor.runtime.features.small.gathering.scenario import scenario, scenario_script
from nestor.runtime.features.small.gathering.symbols import SymbolIndex
from nestor.runtime.features.small.understanding.intent import Intent, question_parts, search_terms
from nestor.runtime.features.small.workspace import Workspace

ANSWER_MAX_TOKENS = 320
EARLIER_ANSWER_CHARS = 600
EARLIER_WEIGHT = 0.7
CALL_TIMEOUT_S = 30
MAX_RUN_CHARS = 400
"""The end of one call's output the answer step sees."""
MAX_CALLED_DEFINITIONS = 3
"""Definitions of the functions the question's calls call, shown at most (a name may have several)."""
MAX_CALLEE_DEFINITIONS = 3
"""Definitions of the short functions those call, shown at most."""
SHORT_CALLEE_LINES = 15
"""A function the called one calls is shown when it is shorter than this."""
_OWN_RECEIVERS = frozenset({"", "self", "cls", "this", "Self"})
"""What a call of a project function is made on, when made on anything ("" when called plainly)."""
_FUNCTION_KINDS = ("function", "method")
_ASKS_WHERE = re.compile(
    r"\b(?:where(?:'s)?|which\s+(?:file|module|function|method|class|part)|point\s+me|implemented|"
    r"defined|lives?)\b",
    re.IGNORECASE,
)


async def answer(
    work: Workspace,
    intent: Intent,
    prompt: str,
    symbols: SymbolIndex,
    *,
    read_only: bool,
    earlier: Sequence[tuple[str, str]] = (),
) -> str | None:
    """Answer the question ``prompt`` from the evidence; None when a budget stopped the run.

    ``read_only``: the agent may not change anything, so the question's calls are not run.
    ``earlier``: the session's exchanges before this one (a follow-up's "it" is in them): their
    names are searched too, after the question's own, and the answer step sees them.
    """
    host, reader = work.host, work.reader
    if earlier:
        intent = _with_earlier_terms(intent, earlier, symbols)
    questions = question_parts(prompt)
    parts = [{term.text for term in search_terms(part, symbols.names())} for part in questions]
    calls = _with_example_calls(prompt, symbols)
    evidence = await gather_evidence(
        intent,
        reader,
        host.run_tools,
        symbols=symbols,
        parts=parts if len(parts) > 1 else (),
        extra_hits=_called_definitions(calls, symbols, reader),
    )
    ran = await _run_quoted_calls(work, calls, read_only=read_only)
    default = asks_for_a_default(prompt)
    signature_defaults = parameter_defaults(prompt, intent, symbols, reader) if default else ""
    message = quoted_message(prompt)
    sources = await message_sources(work, message, code_index(reader)) if message else []
    origin = "The message comes from: " + "; ".join(sources) + "." if sources else ""
    if evidence.empty and not ran and not origin:
        card = project_card(reader)
        body = "Nothing in the project matched the question's terms. What the project is:\n\n" + card.render()
    else:
        body = "\n\n".join(part for part in (evidence.render(), signature_defaults, origin) if part)
    before = "".join(
        f"Earlier question: {question}\nYour earlier answer: {said[:EARLIER_ANSWER_CHARS]}\n\n"
        for question, said in earlier
    )
    reply = await host.ask(
        prompts.ANSWER,
        f"<evidence>\n{body}\n</evidence>\n\n{_run_block(ran)}{before}Question: {prompt}",
        max_tokens=ANSWER_MAX_TOKENS,
    )
    if reply is None:
        return None
    # Facts nestor read or ran itself follow the model's words: a small model misreads them.
    facts = [origin, ran, signature_defaults, raised(evidence.regions, intent, reader, prompt)]
    if _ASKS_WHERE.search(prompt):
        facts += [cited_functions(reply, symbols), where_defined(intent, symbols, reply)]
    facts.append(values(reply, intent, symbols, reader, default=default, regions=evidence.regions))
    return "\n\n".join([reply.strip(), *(fact for fact in facts if fact)])


def _run_block(ran: str) -> str:
    """What the question's calls gave, apart from the evidence and with what to do with it.

    A small model asked what a call returns answers from what such code usually does, even with
    the run's output in its evidence (``{ foo: 'bar', foo: 'baz' }`` for cookie's parse, which
    keeps the first): the result is set out on its own and named the answer.
    """
    if not ran:
        return ""
    return (
        f"<run>\n{ran}\n</run>\n\nThe <run> block is what the code gave when it was run: state that "
        "result exactly as it is, then explain from the evidence how the code gives it, naming the "
        "functions and values it uses.\n\n"
    )


def _with_earlier_terms(intent: Intent, earlier: Sequence[tuple[str, str]], symbols: SymbolIndex) -> Intent:
    """``intent`` with the names of the earlier questions added, weighing less than its own."""
    known = {term.text for term in intent.terms}
    added = [
        replace(term, weight=term.weight * EARLIER_WEIGHT)
        for question, _ in earlier
        for term in search_terms(question, symbols.names())
        if term.text not in known and (term.exact or term.is_file)
    ]
    return replace(intent, terms=(*intent.terms, *added))


def _functions(symbols: SymbolIndex) -> set[str]:
    """The names the project defines a function or method by."""
    return {
        name
        for name in symbols.names()
        if any(symbol.kind in _FUNCTION_KINDS for symbol in symbols.definitions(name))
    }


def _with_example_calls(prompt: str, symbols: SymbolIndex) -> str:
    """``prompt`` with the calls it implies by an example (:func:`.calls.example_calls`) written out."""
    implied = example_calls(prompt, _functions(symbols))
    return f"{prompt}\n" + "\n".join(implied) if implied else prompt  # checked as any call the user writes


def _called_definitions(prompt: str, symbols: SymbolIndex, reader: ProjectReader) -> list[tuple[str, int]]:
    """Where the project's functions the question's calls call are defined: what a run of them does.

    Then the short functions those call, in the order they call them, when the project defines
    one function of that name: what cookie's ``parse`` does with a broken value is in the
    ``try``/``catch`` of ``tryDecode``, which it calls.
    """
    called = [
        (symbol.path, symbol.line)
        for name in called_names(prompt)
        for symbol in symbols.definitions(name)
        if symbol.kind in _FUNCTION_KINDS and not is_test_path(symbol.path)
    ][:MAX_CALLED_DEFINITIONS]
    if not called:
        return []
    index = code_index(reader)  # only now: indexing every file is the slow part of a question
    callees: list[tuple[str, int]] = []
    for call in index.calls:
        caller = call.caller
        if caller is None or (caller.path, caller.line) not in called:
            continue
        defined = [
            d for d in index.defined(call.name) if d.kind in _FUNCTION_KINDS and not is_test_path(d.path)
        ]
        if len(defined) != 1 or not _calls_its_own(reader, call.path, call.line, call.name):
            continue  # not the project's, several of that name, or a method of some value: a guess
        callee = defined[0]
        place = (callee.path, callee.line)
        if callee.end - callee.line < SHORT_CALLEE_LINES and place not in called:
            callees.append(place)
    return [*called, *list(dict.fromkeys(callees))[:MAX_CALLEE_DEFINITIONS]]


def _calls_its_own(reader: ProjectReader, path: str, line: int, name: str) -> bool:
    """Whether ``line`` calls ``name`` as a function, or as a method of ``self``, ``cls`` or ``this``.

    ``CURRENCY_SYMBOLS.get(currency)`` calls a dict's ``get``, not the project's ``Inventory.get``.
    """
    lines = (reader.read_text(path) or "").splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    receivers = re.findall(rf"(?:([\w$]+)\s*(?:\.|::)\s*)?(?<![\w$]){re.escape(name)}\s*\(", text)
    return any(receiver in _OWN_RECEIVERS for receiver in receivers)


async def _run_quoted_calls(work: Workspace, prompt: str, *, read_only: bool) -> str:
    """Run the calls ``prompt`` writes out (:mod:`.calls`, examples written out already); what they gave."""
    if read_only or "bash" not in work.host.tool_names():
        return ""
    scripts: list[tuple[str, str]] = []
    told = scenario(prompt)
    if told is not None:
        imports = [import_statement(work.reader, name) for name in told.setup.names]
        if all(found is not None for found in imports):
            scripts.append((told.label, scenario_script(told, [found for found in imports if found])))
    receivers = example_values(prompt)
    for call in quoted_calls(prompt):
        imports = [import_statement(work.reader, name) for name in call.names]
        if scripts and told is not None and call.expression == told.setup.expression:
            continue  # the object as it is made says less than the scenario's run
        if all(found is not None for found in imports):
            found_imports = [found for found in imports if found is not None]
            scripts.append((call.expression, call_script(call, found_imports, receivers)))
    python = user_python()
    runs = [(label, f"{python} -W ignore -c {shlex.quote(script)}") for label, script in scripts]
    language = "Python"
    if not runs:
        runs = [
            (call.expression, f"node -e {shlex.quote(call.script)}")
            for call in node_calls(prompt, work.reader)
        ]
        language = "JavaScript (node)"
    if not runs:
        return ""
    outcomes = await work.host.run_tools(
        [("bash", {"command": command, "timeout": CALL_TIMEOUT_S}) for _, command in runs]
    )
    rows = [
        _ran_row(expression, outcome.content.strip())
        for (expression, _), outcome in zip(runs, outcomes, strict=True)
        if outcome.ok and outcome.metadata.get("exit_code") == 0 and outcome.content.strip()
    ]
    return f"Run in the project's {language}:\n" + "\n".join(rows) if rows else ""


def _ran_row(expression: str, output: str) -> str:
    """A call and what it gave; a script that says what it ran (a method on each value) says it itself."""
    if output.startswith(">>> "):
        return output[: MAX_RUN_CHARS * MAX_CALLS]
    return f">>> {expression}\n{output[-MAX_RUN_CHARS:]}"
