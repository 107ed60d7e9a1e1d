"""Answering questions about the git history and the current diff, from git's own record.

nestor reads the log (the last commits, each with its files), the patches of the last few
commits and the uncommitted diff with its own git (:func:`nestor.tools.git.runner.run_git_async`:
no repository config, hook or filter runs), and the answer step sees them as its evidence. Each
hunk's header names the function it is in, which answers "in which function".
"""

from __future__ import annotations

from pathlib import Path

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.workspace import Workspace
from nestor.tools.git.runner import run_git_async

LOG_COMMITS = 15
PATCH_COMMITS = 4
MAX_PATCH_CHARS = 2500
MAX_DIFF_CHARS = 2500
HISTORY_MAX_TOKENS = 240


async def history_answer(work: Workspace, prompt: str) -> str | None:
    """Answer ``prompt`` from the log, the last commits' patches and the uncommitted diff."""
    root = work.reader.root
    log = await _git(root, "log", f"-n{LOG_COMMITS}", "--date=short", "--format=%h %ad %an: %s", "--stat=100")
    if log is None:
        return "This project is not a git repository (or git is not available), so it has no history to read."
    patches = await _git(
        root, "log", f"-n{PATCH_COMMITS}", "--format=commit %h: %s", "-p", "--no-color", "-U2"
    )
    diff = await _git(root, "diff", "HEAD", "--no-color", "-U2")
    untracked = await _git(root, "ls-files", "--others", "--exclude-standard")
    parts = [f"<git-log>\n{log.strip() or '(no commits)'}\n</git-log>"]
    if patches:
        parts.append(f"<last-commits>\n{_cut(patches, MAX_PATCH_CHARS)}\n</last-commits>")
    changes = (diff or "").strip()
    if untracked and untracked.strip():
        changes += "\nNew files not yet added: " + ", ".join(untracked.split())
    parts.append(
        f"<uncommitted-changes>\n{_cut(changes, MAX_DIFF_CHARS) or '(none)'}\n</uncommitted-changes>"
    )
    return await work.host.ask(
        prompts.HISTORY, "\n\n".join(parts) + f"\n\nQuestion: {prompt}", max_tokens=HISTORY_MAX_TOKENS
    )


async def _git(root: Path, *args: str) -> str | None:
    done = await run_git_async(root, *args)
    if done is None or done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"
