"""Undo: what putting back a prompt's or an agent's changes would write, and writing it.

A plan names every file whose content would change, with a diff from what it holds now to what it
held before the change. An undo of prompt N (and of every prompt after it) puts back each file
nestor's agents changed since that prompt to what it held just before their first change to it;
an undo of an agent puts back only the files that agent (and its sub-agents) changed, and is
refused when a later change by another agent, or from outside nestor, touched one of them. Files
changed outside nestor are never put back; files over the size limit were never snapshotted and
are left as they are (the plan names them).

Applying a plan snapshots the project first (what changed outside nestor is kept in the shadow
repository), checks every file can be written, writes them all or none
(:mod:`nestor.checkpoints.restore`), and snapshots again.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from nestor.checkpoints.project_tree import FileState, ProjectTree
from nestor.checkpoints.recorder import CheckpointRecorder
from nestor.checkpoints.restore import Target, apply, problems
from nestor.core.errors import CheckpointError
from nestor.store.checkpoints import Checkpoint
from nestor.tools.git.shadow import Entry

_MAX_DIFF_LINES = 200

FileAction = Literal["restore", "create", "delete"]


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One file an undo writes.

    Attributes:
        path: The file, relative to the project.
        action: ``restore`` (its content goes back), ``create`` (it is gone and comes back) or
            ``delete`` (it did not exist before).
        diff: A unified diff from now to after the undo (or a line saying the file is binary).

    """

    path: str
    action: FileAction
    diff: str


@dataclass(frozen=True, slots=True)
class UndoPlan:
    """What an undo would do.

    Attributes:
        title: What is undone (``prompt 3: add the tests``, ``agent explore (ses_...)``).
        files: The files it writes, by path.
        left: Files the undone changes touched that no snapshot holds (over the size limit,
            nested repositories): left as they are.
        refusal: Why it cannot be done (another agent changed the same file later); None when it can.

    """

    title: str
    files: tuple[PlannedFile, ...] = ()
    left: tuple[str, ...] = ()
    refusal: str | None = None
    targets: Mapping[str, Target] = field(default_factory=dict[str, Target], repr=False)
    reverts: tuple[tuple[int, str], ...] = field(default=(), repr=False)
    seen: Mapping[str, str | None] = field(default_factory=dict[str, "str | None"], repr=False)
    """A digest of each planned file as it was shown: an undo writes only if none changed since."""

    @property
    def empty(self) -> bool:
        """Nothing to write (and nothing refused)."""
        return not self.files and self.refusal is None


async def plan_prompt_undo(recorder: CheckpointRecorder, from_seq: int, title: str) -> UndoPlan:
    """Put back what nestor's agents changed since the prompt at ``from_seq`` (that prompt included)."""
    rows = [row for row in recorder.checkpoints.of_session(recorder.session_id) if _from(row, from_seq)]
    return await _plan(recorder, title, rows, lambda agent_id: agent_id is not None)


async def plan_agent_undo(recorder: CheckpointRecorder, agent_ids: Iterable[str], title: str) -> UndoPlan:
    """Put back what the agents ``agent_ids`` changed, unless another change touched those files since."""
    agents = set(agent_ids)
    rows = recorder.checkpoints.of_session(recorder.session_id)
    plan = await _plan(recorder, title, rows, lambda agent_id: agent_id in agents)
    first: dict[str, int] = {}
    for row in rows:
        for change in row.changes:
            if change.agent_id in agents and not change.reverted:
                first.setdefault(change.path, row.id)
    conflicts: list[str] = []
    for path, since in sorted(first.items()):
        later = recorder.checkpoints.changes_after(str(recorder.project_root), since, [path])
        others = [c for c in later if c.agent_id not in agents and not c.reverted]
        if others:
            who = others[0].agent_id or "something outside nestor"
            conflicts.append(f"{path} (changed later by {who})")
    if conflicts:
        shown = ", ".join(conflicts[:5]) + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
        refusal = f"cannot undo {title} alone: {shown}; undo the prompt instead, or change the files by hand"
        return UndoPlan(title, plan.files, plan.left, refusal)  # nothing to write: no targets
    return plan


def latest_undoable_prompt(recorder: CheckpointRecorder) -> int | None:
    """The position of the last prompt with changes of nestor's agents not undone yet, if any."""
    latest: int | None = None
    for row in recorder.checkpoints.of_session(recorder.session_id):
        if row.prompt_seq is not None and any(c.agent_id and not c.reverted for c in row.changes):
            latest = row.prompt_seq if latest is None else max(latest, row.prompt_seq)
    return latest


async def apply_undo(recorder: CheckpointRecorder, plan: UndoPlan) -> None:
    """Write a plan's files (all or none) between two snapshots, and mark its changes undone.

    Raises:
        CheckpointError: The plan was refused, the files changed since it was made, or one could
            not be written (nothing was changed).

    """
    if plan.refusal is not None:
        raise CheckpointError(plan.refusal)
    async with recorder.lock:
        if await recorder.snapshot_held("outside") is None:
            raise CheckpointError(
                f"cannot snapshot the project before the undo, so nothing was written: {recorder.stopped}"
            )
        with _project_tree(recorder) as tree:
            now = {
                path: target
                for path, target in plan.targets.items()
                if _digest(tree, path) == plan.seen.get(path)
            }
            if set(now) != {file.path for file in plan.files}:
                raise CheckpointError(
                    "the files changed since the undo was shown, so nothing was written",
                    hint="look at the undo again and confirm it",
                )
            found = problems(tree, recorder.project_root, now, recorder.max_file_bytes)
            if found:
                raise CheckpointError(
                    f"cannot undo {plan.title} in full, so nothing was changed: {'; '.join(found[:5])}",
                    hint="fix what is named and undo again",
                )
            apply(tree, now)
        await recorder.snapshot_held("undo")
    recorder.checkpoints.mark_reverted(plan.reverts)


async def _plan(
    recorder: CheckpointRecorder, title: str, rows: Sequence[Checkpoint], chosen: Callable[[str | None], bool]
) -> UndoPlan:
    """Put back the files of the changes whose agent is ``chosen`` in ``rows``, not undone yet."""
    before: dict[str, str] = {}  # path -> the tree holding it as it was before its first chosen change
    reverts: list[tuple[int, str]] = []
    left: list[str] = []
    for row in rows:
        for change in row.changes:
            if chosen(change.agent_id) and not change.reverted and row.parent_tree is not None:
                before.setdefault(change.path, row.parent_tree)
                reverts.append((change.checkpoint_id, change.path))
        if row.agent_id is not None and chosen(row.agent_id):
            left += row.skipped
    trees: dict[str, dict[str, Entry]] = {}
    for tree in set(before.values()):
        trees[tree] = await recorder.shadow.entries(tree)
    wanted = {path: trees[tree].get(path) for path, tree in before.items()}
    contents = await recorder.shadow.blobs(entry.blob for entry in wanted.values() if entry is not None)
    targets = {path: _target(path, entry, contents) for path, entry in wanted.items()}
    with _project_tree(recorder) as tree:
        differing = _differing(tree, targets)
        files = tuple(_planned(tree, target) for _path, target in sorted(differing.items()))
        seen = {path: _digest(tree, path) for path in differing}
    return UndoPlan(title, files, tuple(sorted(set(left))), None, differing, tuple(reverts), seen)


def _project_tree(recorder: CheckpointRecorder) -> ProjectTree:
    try:
        return ProjectTree(recorder.project_root)
    except OSError as error:
        raise CheckpointError(
            f"cannot open the project {recorder.project_root}: {error.strerror or error}",
            hint="check that the folder is still there, and not a link now",
        ) from error


def _from(row: Checkpoint, from_seq: int) -> bool:
    return row.prompt_seq is not None and row.prompt_seq >= from_seq


def _target(path: str, entry: Entry | None, contents: Mapping[str, bytes]) -> Target:
    if entry is None:
        return Target(path, "absent")
    if entry.mode == "120000":
        return Target(path, "link", contents[entry.blob])
    return Target(path, "file", contents[entry.blob], executable=entry.mode == "100755")


def _differing(tree: ProjectTree, targets: Mapping[str, Target]) -> dict[str, Target]:
    """The targets the project does not match now."""
    return {path: target for path, target in targets.items() if tree.state(path) != _wanted(target)}


def _digest(tree: ProjectTree, path: str) -> str | None:
    """What a file holds now, as a digest (None: no file)."""
    current = tree.state(path)
    if current is None:
        return None
    kind, data, executable = current
    return hashlib.sha256(f"{kind}:{executable}:".encode() + data).hexdigest()


def _wanted(target: Target) -> FileState | None:
    return None if target.kind == "absent" else (target.kind, target.data, target.executable)


def _planned(tree: ProjectTree, target: Target) -> PlannedFile:
    now = tree.state(target.path)
    action: FileAction = "delete" if target.kind == "absent" else "create" if now is None else "restore"
    before = now[1] if now is not None else b""
    return PlannedFile(target.path, action, _diff(target.path, before, target.data))


def _diff(path: str, now: bytes, after: bytes) -> str:
    try:
        old, new = now.decode(), after.decode()
    except UnicodeDecodeError:
        return f"binary file {path}: {len(now)} bytes now, {len(after)} bytes after the undo"
    if "\0" in old or "\0" in new:
        return f"binary file {path}: {len(now)} bytes now, {len(after)} bytes after the undo"
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )
    if len(lines) > _MAX_DIFF_LINES:
        lines = [*lines[:_MAX_DIFF_LINES], f"... {len(lines) - _MAX_DIFF_LINES} more lines\n"]
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
