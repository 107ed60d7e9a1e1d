"""Pruning snapshots: with their sessions (``nestor sessions delete``) and by age (``keep_days``).

Checkpoint rows go with their session (the database cascades); what they held in the shadow
repository goes here: every object no remaining checkpoint of the project needs is removed, and
the indexes of sessions that hold none. A project with no checkpoint left loses its shadow
repository altogether.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from nestor.core.errors import CheckpointError
from nestor.store.checkpoints import CheckpointStore
from nestor.tools.git.shadow import ShadowRepository

_DAY_S = 86_400.0


async def prune_project(data_dir: Path, project_path: Path, checkpoints: CheckpointStore) -> None:
    """Remove from the project's shadow repository what no remaining checkpoint needs (best effort)."""
    shadow = ShadowRepository(data_dir, project_path)
    if not shadow.git_dir.is_dir():
        return
    keep = checkpoints.kept_trees(str(shadow.project_root))
    if not keep:
        async with shadow.locked(shared=False):  # after any snapshot being taken
            shutil.rmtree(shadow.git_dir, ignore_errors=True)
        return
    with contextlib.suppress(CheckpointError):  # a project folder gone: its snapshots stay until deleted
        await shadow.prune(keep, checkpoints.sessions(str(shadow.project_root)))


async def prune_old(
    data_dir: Path, checkpoints: CheckpointStore, keep_days: int, *, clock: Callable[[], float] = time.time
) -> list[str]:
    """Delete the checkpoints older than ``keep_days`` (0: none) and prune their projects; returns them."""
    if keep_days <= 0:
        return []
    projects = checkpoints.delete_older_than(clock() - keep_days * _DAY_S)
    for project in projects:
        await prune_project(data_dir, Path(project), checkpoints)
    return projects
