"""The general change step: SEARCH/REPLACE blocks asked of the model, applied, tested, retried.

nestor gathers evidence around the request and the failure, asks for SEARCH/REPLACE blocks
(:mod:`.edit_blocks`), applies them with the ``edit`` tool, runs the tests again, and tries again
with the new failure, a few times at most.
"""

from __future__ import annotations

from collections.abc import Callable

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.acting.edit_blocks import EditBlock, locate, parse_edit_blocks
from nestor.runtime.features.small.gathering.evidence import Evidence
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.retrieval import gather_evidence
from nestor.runtime.features.small.gathering.suspects import called_in_tests
from nestor.runtime.features.small.understanding.intent import Intent, SearchTerm
from nestor.runtime.features.small.workspace import (
    EDIT_ATTEMPTS,
    EDIT_MAX_TOKENS,
    PlannedEdit,
    Workspace,
    change_report,
    traceback_locations,
    trim_lines,
)


async def edit_with_blocks(
    work: Workspace,
    intent: Intent,
    prompt: str,
    failure: str | None,
    command: str | None,
    named: str | None,
) -> str | None:
    """Change the project as ``prompt`` asks, until the tests pass or the attempts run out.

    ``failure`` is the tests' output before the change (None when they pass or there are none);
    ``named`` runs the tests the user named, which fail first and say most. Returns the report,
    or None when a budget stopped the run.
    """
    notes: list[str] = []
    changed: list[str] = []
    said = ""  # the model's words with the last edits that were made

    def editable(path: str) -> bool:
        return work.scope.allows(path, exists=True)

    for attempt in range(EDIT_ATTEMPTS):
        evidence = await _change_evidence(work, intent, failure)
        request = _edit_request(prompt, evidence, failure, notes, editable)
        reply = await work.host.ask(prompts.EDIT, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt) or ""
        if not reply:
            return None
        blocks = parse_edit_blocks(reply)
        shown = list(dict.fromkeys(excerpt.region.path for excerpt in evidence.excerpts))
        applied, notes = await apply_blocks(work, blocks, shown)
        changed.extend(path for path in applied if path not in changed)
        said = reply if applied else said
        if not applied:
            notes = notes or ["No edit block was found in your reply: write SEARCH/REPLACE blocks."]
            continue
        if command is None:
            return change_report(changed, said, None, None)
        failure = await work.run_tests(named) if named else None
        if failure is None:
            failure = await work.run_tests(command)
        if failure is None:
            return change_report(changed, said, command, passed=True)
    return change_report(changed, said, command, passed=False if command else None)


async def _change_evidence(work: Workspace, intent: Intent, failure: str | None) -> Evidence:
    """Evidence for an edit: the request's terms, the failure's frames, what the failing tests call."""
    locations = traceback_locations(failure or "")
    terms = list(intent.terms)
    known = {term.text for term in terms}
    for name in called_in_tests(work.reader, intent, locations):
        if name not in known:
            known.add(name)
            terms.append(SearchTerm(name, 2.0))
    searched = Intent(kind=intent.kind, terms=tuple(terms), failing_tests=intent.failing_tests)
    return await gather_evidence(
        searched, work.reader, work.host.run_tools, max_lines=110, extra_hits=locations, whole_files=True
    )


async def apply_blocks(
    work: Workspace, blocks: list[EditBlock], shown: list[str]
) -> tuple[list[str], list[str]]:
    """Apply the blocks through the edit tool; returns the files changed and what went wrong.

    ``shown`` are the files the model was shown: a block's path that is no project file is
    taken to be the one of them its SEARCH lines match.
    """
    edits: list[PlannedEdit] = []
    problems: list[str] = []
    pending: dict[str, str] = {}
    for block in blocks:
        path = _block_path(work.reader, block, shown)
        if path is None:
            problems.append(
                f"{block.path}: no such file in the project, and the SEARCH lines match no file shown."
            )
            continue
        text = pending.get(path, work.reader.read_text(path) or "")
        if not text and not block.search.strip():
            edits.append(PlannedEdit(path, "", block.replace))  # a new file
            pending[path] = block.replace
            continue
        located = locate(block, text) if text else None
        if located is None:
            problems.append(f"{path}: the SEARCH lines were not found exactly once:\n{block.search.rstrip()}")
            continue
        if located.old == located.new:
            problems.append(f"{path}: the REPLACE lines are the same as the SEARCH lines: nothing changes.")
            continue
        pending[path] = text.replace(located.old, located.new, 1)
        edits.append(PlannedEdit(path, located.old, located.new))
    applied = await work.run_edits(edits, problems)
    return applied, problems


def _block_path(reader: ProjectReader, block: EditBlock, shown: list[str]) -> str | None:
    """The project file a block edits: the path it names, else the one shown file its SEARCH matches.

    Small models copy the format's placeholder path, or leave a directory out; the lines
    they mean to replace say which file they looked at.
    """
    named = _project_path(reader, block.path)
    if named is not None and (reader.read_text(named) is not None or not block.search.strip()):
        return named
    matching = [path for path in shown if locate(block, reader.read_text(path) or "") is not None]
    return matching[0] if len(matching) == 1 else None


def _project_path(reader: ProjectReader, path: str) -> str | None:
    """``path`` as the model wrote it, made project-relative; None when it is not a project file."""
    cleaned = path.strip().strip("`'\"").removeprefix("./")
    resolved = reader.resolve(cleaned)
    if resolved is None:
        return None
    relative = resolved.relative_to(reader.root).as_posix()
    if resolved.is_file() or not resolved.exists():
        return relative
    return None


def _edit_request(
    prompt: str, evidence: Evidence, failure: str | None, notes: list[str], editable: Callable[[str], bool]
) -> str:
    """The edit step's prompt: the code it may change, the rest read-only (the tests, say), the failure."""
    # A small model edits the first code it sees: what it may not change is shown apart, after.
    parts = [f"<code>\n{evidence.render(numbered=False, paths=editable)}\n</code>"]
    others = evidence.render(numbered=False, paths=lambda path: not editable(path))
    if others.strip():
        parts.append(f"<read-only>\n{others}\n</read-only>")
    if failure:
        parts.append(f"<test-output>\n{trim_lines(failure, 40)}\n</test-output>")
    if notes:
        parts.append("Your previous edit did not work:\n" + "\n".join(f"- {note}" for note in notes[:4]))
    parts.append(f"Request: {prompt}")
    return "\n\n".join(parts)
