"""Whether a language server may have read a file the read rules withhold.

What a server infers (a hover's text, a problem's message) quotes whatever files its analysis
read: a constant's literal type, a docstring reached through an alias, a re-export or an import,
and no server says which files those were. Asking where a symbol is defined cannot close that
(``alias = api_key`` is defined where it is assigned). So the rule holds by construction instead:
inferred text is shown only while the project holds no file of a running server's languages that
the rules withhold, so that none of it can come from one. Places (a definition, a reference, a
problem's line) are judged one by one as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path

MAX_ENTRIES = 50_000
"""A project with more entries than this is not walked whole: its servers' inferred text is not
shown (a walk per answer must stay cheap)."""

_NOT_WALKED = frozenset({".git"})


def withheld_source(
    root: Path, extensions: Collection[str], shown: Callable[[Path], bool], *, max_entries: int = MAX_ENTRIES
) -> str:
    """Why a server's inferred text may quote a withheld file; "" when it cannot.

    Args:
        root: The project (a real path).
        extensions: The file extensions the project's running servers read (``.py``, ``.pyi``).
        shown: The read rules' verdict on a real path (a :class:`~nestor.tools.base.WithheldFilter`).
        max_entries: How many entries are walked at most.

    """
    walked = 0
    folders = [root]
    while folders:
        try:
            with os.scandir(folders.pop()) as found:
                entries = list(found)
        except OSError:
            continue
        for entry in entries:
            walked += 1
            if walked > max_entries:
                return f"the project holds over {max_entries:,} files, too many to check the read rules on"
            if entry.is_symlink():
                # The server reads through it: judged where it leads.
                real = Path(os.path.realpath(entry.path))
                if (real.is_dir() or real.suffix in extensions) and not shown(real):
                    return "the permission rules withhold a file the language server may have read"
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in _NOT_WALKED:
                    folders.append(Path(entry.path))
            elif Path(entry.name).suffix in extensions and not shown(Path(entry.path)):
                return "the permission rules withhold a file the language server may have read"
    return ""
