"""Cost of checkpoints: one snapshot after a one-file edit in a 10,000-file repository, and an undo.

A snapshot is what runs after every tool call that can change files (``CheckpointRecorder``:
``git ls-files`` over the tree's warm shadow index, then ``update-index`` and ``write-tree`` for
the changed file, each in the read-only offline sandbox, and the row in SQLite). It is measured
interleaved with plain ``git add -A && git write-tree`` on a warm index of the same tree, outside
any sandbox, in the same run. The target is 50 ms or less per snapshot; the undo (plan with its
diff, a snapshot before and after, the file written back) is printed beside it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic_ai.messages import ModelRequest, UserPromptPart

from nestor.checkpoints.recorder import CheckpointRecorder, ToolCall
from nestor.checkpoints.undo import apply_undo, plan_prompt_undo
from nestor.store.checkpoints import CheckpointStore
from nestor.store.db import open_database
from nestor.store.messages import MessageStore, prompt_metadata
from nestor.store.sessions import SessionStore
from nestor.tools.git.shadow import ShadowRepository
from nestor.tools.sandbox.detect import detect_blocking

FILES = 10_000
RUNS = 31
TARGET_MS = 50.0
_GIT = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _repository(root: Path) -> None:
    """A git repository of ``FILES`` small files in 100 folders, committed."""
    for folder in range(100):
        (root / f"pkg{folder}").mkdir(parents=True)
        for number in range(FILES // 100):
            (root / f"pkg{folder}" / f"mod{number}.py").write_text(f"VALUE = {folder * 1000 + number}\n" * 10)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b"]
    env = os.environ | _GIT
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], cwd=root, env=env, check=True)


def _init_bare(git_dir: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], env=os.environ | _GIT, check=True)


def _plain_git_seconds(root: Path, git_dir: Path, index: Path) -> float:
    """``git add -A && git write-tree`` into a private index, unsandboxed: what git itself costs."""
    env = (
        os.environ
        | _GIT
        | {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root), "GIT_INDEX_FILE": str(index)}
    )
    started = time.perf_counter()
    subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
    subprocess.run(["git", "write-tree"], cwd=root, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


async def _measure(root: Path, data: Path) -> dict[str, list[float]]:
    db = open_database(data / "nestor.db")
    sessions, messages, checkpoints = SessionStore(db), MessageStore(db), CheckpointStore(db)
    session = sessions.create(root)
    recorder = CheckpointRecorder(
        ShadowRepository(data, root), checkpoints, messages, session.id, max_file_bytes=10**7
    )
    prompt = messages.append(session.id, ModelRequest([UserPromptPart("edit")], metadata=prompt_metadata()))
    samples: dict[str, list[float]] = {"first": [], "edit": [], "unchanged": [], "plain": [], "undo": []}
    started = time.perf_counter()
    await recorder.starting(ToolCall("main", "first", "bash"))
    samples["first"].append(time.perf_counter() - started)
    await recorder.finished("first")
    plain_dir = data / "plain.git"
    _init_bare(plain_dir)
    _plain_git_seconds(root, plain_dir, data / "plain-index")  # warm it, as the shadow's is
    target = root / "pkg7" / "mod42.py"
    for run in range(RUNS):
        await recorder.starting(ToolCall("main", f"c{run}", "edit", frozenset({"pkg7/mod42.py"})))
        target.write_text(f"VALUE = {run}\n")
        started = time.perf_counter()
        await recorder.finished(f"c{run}")
        samples["edit"].append(time.perf_counter() - started)
        await recorder.starting(ToolCall("main", f"n{run}", "bash"))
        started = time.perf_counter()
        await recorder.finished(f"n{run}")
        samples["unchanged"].append(time.perf_counter() - started)
        target.write_text(f"VALUE = {run} (plain)\n")
        samples["plain"].append(_plain_git_seconds(root, plain_dir, data / "plain-index"))
    for _ in range(5):
        await recorder.starting(ToolCall("main", "u", "edit", frozenset({"pkg7/mod42.py"})))
        target.write_text("VALUE = 'to undo'\n")
        await recorder.finished("u")
        started = time.perf_counter()
        await apply_undo(recorder, await plan_prompt_undo(recorder, prompt, "the prompt"))
        samples["undo"].append(time.perf_counter() - started)
    db.close()
    return samples


def main() -> None:
    """Print the median cost of a snapshot and of an undo, and plain git's beside them."""
    backend = detect_blocking().backend or "no sandbox"
    with tempfile.TemporaryDirectory() as tmp:
        root, data = Path(tmp) / "repo", Path(tmp) / "data"
        _repository(root)
        samples = asyncio.run(_measure(root, data))
    ms = {name: statistics.median(times) * 1000 for name, times in samples.items()}
    verdict = "meets" if ms["edit"] <= TARGET_MS else "MISSES"
    rows = [
        ("first snapshot (every file hashed, once)", ms["first"], ""),
        ("snapshot after a one-file edit", ms["edit"], f"{verdict} the {TARGET_MS:.0f} ms target"),
        ("snapshot when nothing changed", ms["unchanged"], ""),
        (
            "git add -A + write-tree, unsandboxed",
            ms["plain"],
            f"snapshot / this: {ms['edit'] / ms['plain']:.2f}x",
        ),
        ("undo of that edit (plan, write, 2 snapshots)", ms["undo"], ""),
    ]
    print(f"Checkpoints, {FILES:,} files (median of {RUNS} runs, interleaved; git under {backend})")
    for label, value, note in rows:
        print(f"  {label:<46} {value:8.1f} ms" + (f"  ({note})" if note else ""))


if __name__ == "__main__":
    main()
