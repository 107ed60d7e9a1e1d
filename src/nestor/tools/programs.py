"""Finding the programs nestor itself runs (git, ripgrep, bubblewrap) where a repository cannot plant one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def find_program(name: str, *, outside: Path | None = None) -> str | None:
    """``name`` on ``PATH``, skipping relative entries (``.``, ``node_modules/.bin``) and any in ``outside``.

    A relative entry names a folder of whatever directory nestor runs in, and ``outside`` (a
    repository's work tree; by default the directory nestor runs in, the project) may hold a
    ``.venv/bin`` the user activated: a program found there would be the repository's, run by
    nestor as its own (ripgrep unsandboxed with the whole environment, bubblewrap as the sandbox).
    """
    if outside is None:
        try:
            outside = Path.cwd().resolve()
        except OSError:
            outside = None
    entries: list[str] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if outside is not None and Path(entry).resolve().is_relative_to(outside):
            continue
        entries.append(entry)
    return shutil.which(name, path=os.pathsep.join(entries)) if entries else None
