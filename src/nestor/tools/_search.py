"""Finding files for ``glob`` and ``grep``: ripgrep when it is there, plain Python otherwise.

Both paths list the same files: regular files (no symlinks), hidden ones included, ``.git``
left out, and inside a git work tree whatever ``.gitignore`` (and git's other exclude files)
ignores left out too. The ripgrep path asks ``rg --files``; the fallback asks
``git ls-files`` inside a work tree and walks the directory otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path

from nestor.core.errors import ToolError
from nestor.tools import fifo_stalls
from nestor.tools.git.runner import run_git
from nestor.tools.programs import find_program

GIT_DIR_NAME = ".git"
_READ_CHUNK_BYTES = 1 << 18
# rg file types are applied after ignore rules, unlike --glob, which would re-admit ignored files.
_NAME_TYPE = "nestorname"


class RipgrepLookup(Enum):
    """How a tool finds the ``rg`` binary when it is not given one."""

    AUTO = "auto"
    """Look for ``rg`` on ``PATH``, then beside the running Python (where the PyPI wheel puts it)."""


RipgrepSetting = str | None | RipgrepLookup
"""A tool's ``rg_path`` argument: a binary path, None to force the fallback, or AUTO."""


def find_ripgrep() -> str | None:
    """Return the path of the ``rg`` binary, or None when there is none."""
    found = find_program("rg")
    if found:
        return found
    beside_python = Path(sys.executable).parent / "rg"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return None


def resolve_ripgrep(setting: RipgrepSetting) -> str | None:
    """Turn a tool's ``rg_path`` argument into a binary path, or None for the fallback."""
    if isinstance(setting, RipgrepLookup):
        return find_ripgrep()
    return setting


async def run_streaming(
    args: list[str], separator: bytes, on_record: Callable[[bytes], None]
) -> tuple[int, str]:
    """Run a command, feeding each ``separator``-terminated stdout record to ``on_record``.

    Records are read in chunks, so arbitrarily long lines are fine. The process is killed if the
    calling task is cancelled.

    Returns:
        The exit code and the stderr text.

    """
    pending = b""

    def on_chunk(chunk: bytes) -> None:
        nonlocal pending
        *records, pending = (pending + chunk).split(separator)
        for record in records:
            on_record(record)

    result = await run_chunks(args, on_chunk)
    if pending:
        on_record(pending)
    return result


async def run_chunks(args: list[str], on_chunk: Callable[[bytes], None]) -> tuple[int, str]:
    """Run a command, feeding its stdout to ``on_chunk`` as it comes, in chunks of any size.

    The process is killed if the calling task is cancelled.

    Returns:
        The exit code and the stderr text.

    """
    process = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=_READ_CHUNK_BYTES,  # fewer, larger reads: rg can print megabytes of matches
    )
    assert process.stdout is not None and process.stderr is not None
    stdout = process.stdout
    stderr_task = asyncio.ensure_future(process.stderr.read())

    async def pump() -> None:
        while chunk := await stdout.read(_READ_CHUNK_BYTES):
            on_chunk(chunk)

    reader = asyncio.ensure_future(pump())
    watcher = asyncio.ensure_future(fifo_stalls.watch(process, group=False))
    try:
        await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if watcher.done() and (stall := watcher.exception()) is not None:
            raise ToolError(
                f"{Path(args[0]).name} was stopped: {stall}, such as an ignore file; remove it, "
                "or search a folder without it"
            )
        await reader
        stderr = await stderr_task
        return_code = await process.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        reader.cancel()
        stderr_task.cancel()
        await process.wait()
        raise
    finally:
        watcher.cancel()
    return return_code, stderr.decode("utf-8", errors="replace")


def ripgrep_error(stderr: str) -> ToolError:
    """Build the error for a failed ``rg`` run from its stderr."""
    lines = [line.removeprefix("rg: ").strip() for line in stderr.splitlines() if line.strip()]
    reason = " ".join(lines[:4]) or "ripgrep failed without saying why"
    return ToolError(f"ripgrep rejected the search: {reason}")


def name_type_args(name_glob: str | None) -> list[str]:
    """Return ``rg`` arguments limiting the search to files whose name matches ``name_glob``."""
    if name_glob is None:
        return []
    return ["--type-add", f"{_NAME_TYPE}:{name_glob}", "--type", _NAME_TYPE]


async def list_files(directory: Path, rg_path: str | None, name_glob: str | None = None) -> list[Path]:
    """List the searchable files under ``directory`` as absolute paths, in no particular order.

    Args:
        directory: An existing directory (absolute).
        rg_path: The ``rg`` binary, or None to use the pure-Python fallback.
        name_glob: A file-name glob ripgrep may pre-filter with; the fallback ignores it, since
            callers apply their full pattern to whatever comes back.

    """
    if rg_path is None:
        return await asyncio.to_thread(list_files_without_ripgrep, directory)
    records: list[bytes] = []
    args = [rg_path, "--files", "--hidden", "--null", "--no-messages", "--glob", f"!{GIT_DIR_NAME}"]
    args += [*name_type_args(name_glob), "--", str(directory)]
    return_code, stderr = await run_streaming(args, b"\0", records.append)
    if return_code not in (0, 1) and not records:
        raise ripgrep_error(stderr)
    return [Path(os.fsdecode(record)) for record in records if record]


def list_files_without_ripgrep(directory: Path) -> list[Path]:
    """List what :func:`list_files` lists, using ``git ls-files`` or a directory walk.

    A directory git lists nothing in is walked: it is empty anyway, or ignored as a whole, and a
    search aimed at an ignored directory means to look inside it (as ripgrep does).
    """
    relative = git_listed_files(directory)
    if not relative:
        return walk_files(directory)
    files: list[Path] = []
    for name in relative:
        path = directory / name
        if not path.is_symlink() and path.is_file():
            files.append(path)
    return files


def git_listed_files(directory: Path) -> list[str] | None:
    """Return the paths (relative, ``/``-separated) git sees under ``directory``, minus ignored ones.

    Tracked files that match an ignore rule are left out too, as ripgrep leaves them out.
    Entries may be directories (an untracked nested repository shows as ``name/``). git runs as
    nestor's own (:mod:`nestor.tools.git.runner`): none of the repository's commands can run.

    Returns:
        The paths, or None when ``directory`` is not in a git work tree or git is missing.

    """
    listed = _git_ls_files(directory, "--cached", "--others", "--exclude-standard")
    if listed is None:
        return None
    ignored = set(_git_ls_files(directory, "--cached", "--ignored", "--exclude-standard") or [])
    return [name for name in listed if name not in ignored]


def git_ignored(directory: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` (relative to ``directory``) git's ignore rules ignore; none when git cannot say.

    git lists no FIFO, socket or device (``ls-files`` sees only files and links), but its ignore
    rules still apply to them by name.
    """
    if not paths:
        return set()
    listed = b"".join(os.fsencode(path) + b"\0" for path in paths)
    done = run_git(directory, "check-ignore", "-z", "--stdin", "--no-index", stdin=listed)
    if done is None:
        return set()
    return {os.fsdecode(name) for name in done.stdout.split(b"\0") if name}


def _git_ls_files(directory: Path, *flags: str) -> list[str] | None:
    done = run_git(directory, "ls-files", "-z", *flags)
    if done is None or not done.ok:
        return None
    return sorted({os.fsdecode(name) for name in done.stdout.split(b"\0") if name})


def walk_files(directory: Path) -> list[Path]:
    """Walk ``directory`` for regular files, skipping ``.git``, symlinks, FIFOs and devices."""
    files: list[Path] = []
    for root, dir_names, file_names in os.walk(directory):
        dir_names[:] = [name for name in dir_names if name != GIT_DIR_NAME]
        root_path = Path(root)
        for name in file_names:
            path = root_path / name
            # lstat: a symlink, FIFO or device is not listed (ripgrep leaves them out too).
            if name != GIT_DIR_NAME and stat.S_ISREG(_lstat_mode(path)):
                files.append(path)
    return files


def _lstat_mode(path: Path) -> int:
    try:
        return path.lstat().st_mode
    except OSError:
        return 0


def newest_first(paths: Iterable[Path]) -> list[tuple[Path, float]]:
    """Pair each path with its modification time, newest first (ties by path); drop vanished ones."""
    dated: list[tuple[Path, float]] = []
    for path in paths:
        try:
            dated.append((path, path.stat().st_mtime))
        except OSError:
            continue
    dated.sort(key=lambda item: (-item[1], str(item[0])))
    return dated


def relative_posix(path: Path, directory: Path) -> str:
    """Return ``path`` relative to ``directory`` with ``/`` separators."""
    return path.relative_to(directory).as_posix()


def describe_location(shown_as: str) -> str:
    """Name a searched location in a message: ``the project root`` reads better than ``.``."""
    return "the project root" if shown_as == "." else shown_as
