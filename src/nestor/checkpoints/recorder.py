"""Taking a session tree's snapshots: one at a time, each change attributed to the call that made it.

One :class:`CheckpointRecorder` serves every agent of a tree (the main agent and each sub-agent,
background ones included). Its agents' hooks (:mod:`nestor.runtime.features.checkpoints`) tell it
when a tool call that can change files starts and ends; it snapshots the project before the first
change of each prompt of the main session and after each such call, one snapshot at a time (a
lock), into the tree's own index of the project's shadow repository.

A snapshot sees what changed since the tree's snapshot before it. Each changed path is attributed:

1. to a call in flight that names the path (``write`` and ``edit`` say which file they write);
2. else to the call that triggered the snapshot, when it names no path (``bash``, an MCP tool);
3. else to a call in flight that names no path (a command still running), the first one;
4. else to nobody: the file changed outside nestor (an editor, another session), and an undo of
   a prompt or an agent leaves it alone.

So a file two shell commands both changed while both ran is attributed to the one whose snapshot
came first. Each tree keeps its own index, so another session's changes are "outside" to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nestor.core.errors import CheckpointError
from nestor.store.checkpoints import CheckpointKind, CheckpointStore, NewChange
from nestor.store.messages import MessageStore
from nestor.tools.git.shadow import Scan, ShadowRepository

MAX_FIRST_FILES = 100_000
"""A folder with more files than this (a home directory) is not snapshotted at all: checkpoints
stop for the session, with a notice, rather than copy it into the data dir."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call that can change files, while it runs and until its snapshot is taken.

    Attributes:
        agent_id: The agent making it.
        tool_call_id: Its id.
        tool_name: The tool.
        paths: The files it says it writes (relative to the project); None when it cannot say.

    """

    agent_id: str
    tool_call_id: str
    tool_name: str
    paths: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot just taken: its tree, and the row that records it (None when nothing changed)."""

    tree: str
    checkpoint_id: int | None
    scan: Scan


class CheckpointRecorder:
    """Snapshots of one session tree.

    Args:
        shadow: The project's shadow repository.
        checkpoints: Where snapshots are recorded.
        messages: The message store (the main session's prompts).
        session_id: The tree's main session.
        max_file_bytes: Files larger than this are not stored.
        notify: Tells the user why checkpoints stopped (once), or that a snapshot could not be
            taken on top of the one before, so what changed since cannot be undone.

    """

    def __init__(
        self,
        shadow: ShadowRepository,
        checkpoints: CheckpointStore,
        messages: MessageStore,
        session_id: str,
        *,
        max_file_bytes: int,
        notify: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self.shadow = shadow
        self.checkpoints = checkpoints
        self.session_id = session_id
        self.max_file_bytes = max_file_bytes
        self._messages = messages
        self._notify = notify
        self.lock = asyncio.Lock()
        """Held while a snapshot is taken (or an undo writes the project): one at a time."""
        self._calls: dict[str, ToolCall] = {}
        latest = checkpoints.latest(session_id)
        self._tree = latest.tree if latest is not None else None
        # Files an earlier process found too large (their sizes unknown here): still never put back.
        self._large = dict.fromkeys(checkpoints.skipped(session_id), -1)
        self._prompt_done = latest.prompt_seq if latest is not None else None
        self.stopped: str | None = None
        """Why this tree takes no more snapshots (None while it does)."""

    @property
    def project_root(self) -> Path:
        """The project snapshotted."""
        return self.shadow.project_root

    @property
    def tree(self) -> str | None:
        """The tree's last snapshot, if any."""
        return self._tree

    async def starting(self, call: ToolCall) -> None:
        """A call that can change files starts: snapshot first if it is its prompt's first change.

        The call counts as in flight only after that snapshot: it has changed nothing yet.
        """
        prompt = self.current_prompt()
        if self._prompt_done != prompt or self._tree is None:
            async with self.lock:
                if self._prompt_done != prompt or self._tree is None:
                    await self._take("prompt", None, prompt)
                    self._prompt_done = prompt
        self._calls[call.tool_call_id] = call

    async def finished(self, tool_call_id: str) -> None:
        """A call ended: snapshot what it changed."""
        call = self._calls.get(tool_call_id)
        if call is None:
            return
        try:
            async with self.lock:
                await self._take("tool", call, self.current_prompt())
        finally:
            self._calls.pop(tool_call_id, None)

    async def abandoned(self, agent_id: str) -> None:
        """An agent's run ended with calls that never finished (cancelled): snapshot what they did."""
        for call in [call for call in self._calls.values() if call.agent_id == agent_id]:
            await self.finished(call.tool_call_id)

    def current_prompt(self) -> int | None:
        """The position of the main session's last prompt (None before the first)."""
        prompts = self._messages.prompts(self.session_id)
        return prompts[-1][0] if prompts else None

    async def snapshot_held(self, kind: CheckpointKind) -> Snapshot | None:
        """Take a snapshot no call triggered (around an undo; :attr:`lock` held): changes of nobody."""
        return await self._take(kind, None, self.current_prompt())

    async def _take(
        self, kind: CheckpointKind, trigger: ToolCall | None, prompt: int | None
    ) -> Snapshot | None:
        """Snapshot the project and record it (a prompt's snapshot always, others when something changed)."""
        if self.stopped is not None:
            return None
        try:
            return await self._snapshot(kind, trigger, prompt)
        except CheckpointError as error:
            self._stop(f"checkpoints are off for this session: {error.message}")
        except Exception as error:  # the data dir, the database, a bug: the agents go on without
            self._stop(f"checkpoints are off for this session: {type(error).__name__}: {error}")
        return None

    async def _snapshot(
        self, kind: CheckpointKind, trigger: ToolCall | None, prompt: int | None
    ) -> Snapshot | None:
        shadow = self.shadow
        # Its config again each time: whatever else wrote into the data dir lasts one snapshot at most.
        shadow.prepare()
        index = shadow.index_file(self.session_id)
        if not index.exists():  # a new tree, or its snapshots were pruned: nothing to compare with
            shadow.seed_index(self.session_id)
            self._tree = None
        async with shadow.locked(shared=True):
            scan = await shadow.scan(index, self.max_file_bytes)
            if self._tree is None and len(scan.changed) > MAX_FIRST_FILES:
                self._stop(
                    f"checkpoints are off for this session: {self.project_root} holds more than "
                    f"{MAX_FIRST_FILES:,} files to snapshot (add a .gitignore, or work in a smaller folder)"
                )
                return None
            parent = self._tree
            try:
                tree = await shadow.store(index, scan, parent)
            except CheckpointError as error:
                tree, scan, parent = await self._rebuilt(index, parent, error)
        new_large = {path: size for path, size in scan.large.items() if self._large.get(path) != size}
        # A file that was too large to snapshot has no "before" to go back to: never put back.
        shrunk = [path for path in scan.changed if path in self._large]
        self._large = dict(scan.large)
        kept = Scan({p: flag for p, flag in scan.changed.items() if p not in shrunk}, scan.large, scan.nested)
        changes = _attribute(kept, trigger, list(self._calls.values())) if parent is not None else []
        checkpoint_id = None
        if kind == "prompt" or changes or new_large or shrunk:
            checkpoint_id = self.checkpoints.add(
                session_id=self.session_id,
                project_path=str(self.project_root),
                prompt_seq=prompt,
                kind=kind,
                tree=tree,
                parent_tree=parent,
                agent_id=trigger.agent_id if trigger is not None else None,
                tool_call_id=trigger.tool_call_id if trigger is not None else None,
                tool_name=trigger.tool_name if trigger is not None else "",
                skipped=[*new_large, *shrunk, *(scan.nested if parent is None else ())],
                changes=changes,
            )
        self._tree = tree
        return Snapshot(tree, checkpoint_id, scan)

    async def _rebuilt(
        self, index: Path, parent: str | None, error: CheckpointError
    ) -> tuple[str, Scan, str | None]:
        """A snapshot from the files alone, when the index could not take the change (``error``).

        An index naming objects a prune removed, say: it is started again, and what changed since
        ``parent`` is read from the two trees. When even that fails, the snapshot has no parent and
        the user is told that the changes since the one before cannot be undone.
        """
        shadow = self.shadow
        await asyncio.to_thread(index.unlink, missing_ok=True)
        scan = await shadow.scan(index, self.max_file_bytes)
        tree = await shadow.store(index, scan, None)
        if parent is None:
            return tree, scan, None
        try:
            changed = await shadow.changes(parent, tree)
        except CheckpointError as second:
            causes = f"{error.message}; {second.message}"
            self._notify(
                f"a snapshot could not be taken on top of the one before ({causes}): "
                "what changed since cannot be undone; later changes can"
            )
            return tree, scan, None
        kept = {path: flag for path, flag in changed.items() if path not in scan.large}
        return tree, Scan(kept, scan.large, scan.nested), parent

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
            self._notify(reason)


def _attribute(scan: Scan, trigger: ToolCall | None, in_flight: list[ToolCall]) -> list[NewChange]:
    """Who made each change (see the module's docstring)."""
    undeclared = [call for call in in_flight if call.paths is None]
    changes: list[NewChange] = []
    for path, status in sorted(scan.changed.items()):
        owner = next((call for call in in_flight if call.paths is not None and path in call.paths), None)
        if owner is None and trigger is not None and trigger.paths is None:
            owner = trigger
        if owner is None and undeclared:
            owner = undeclared[0]
        changes.append(
            NewChange(path, status, owner.agent_id if owner else None, owner.tool_call_id if owner else None)
        )
    return changes
