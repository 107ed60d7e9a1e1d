"""A project's shadow repository: snapshots of its files in a git dir of nestor's own.

Checkpoints (:mod:`nestor.checkpoints`) store each snapshot of a project as a git tree in a
repository nestor keeps under its data dir, never in the project's own repository: the user's
index, ``HEAD``, refs, stash and config are never read for writing nor changed. Its layout, under
``<data dir>/checkpoints/<key>/`` (the key is a hash of the project's path):

- ``HEAD``, ``config``, ``objects/``, ``refs/``, ``info/``: a git dir written by nestor alone;
  its config names no command, git runs with no other config (:func:`run_shadow_git`), and its
  ``info/attributes`` turns off every conversion a project's ``.gitattributes`` asks for;
- ``project``: the project's path, for a person looking at the data dir;
- ``indexes/<name>``: one index per session tree. An index holds the state of the last snapshot
  with each file's stat data, so the next snapshot hashes only the files whose stat changed;
- ``lock``: snapshots hold it shared, pruning exclusively (several nestor processes may share a
  project).

The work tree is the top of the repository holding the project (its ``.gitignore`` files apply,
from the top down), or the project itself outside a repository; only the project's files are
snapshotted, and paths are given relative to the project.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import stat
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from nestor.core.errors import CheckpointError
from nestor.core.files import read_bounded_text
from nestor.tools.git.location import find_repository
from nestor.tools.git.runner import GitOutput, ShadowGit, run_shadow_git
from nestor.tools.programs import find_program
from nestor.tools.sandbox.detect import Availability

SNAPSHOT_TIMEOUT_S = 600.0
"""The first snapshot of a large project hashes every file: it may take minutes."""

_CONFIG = """[core]
\trepositoryformatversion = 0
\tbare = false
\tfsmonitor = false
\tuntrackedCache = false
\tautocrlf = false
\tsymlinks = true
\tfileMode = true
\tlooseCompression = 1
\texcludesFile = /dev/null
\tattributesFile = /dev/null
\thooksPath = /dev/null
[gc]
\tauto = 0
"""
_ATTRIBUTES = "* -text !eol -filter -ident -diff !working-tree-encoding\n"
"""The shadow's ``info/attributes``, which outranks every ``.gitattributes``: files are stored
byte for byte (no end-of-line conversion, no filter, no ``ident``), so a restore gives them back
exactly as they were."""
_SNAPSHOT_ALIAS = "nestor-snapshot"
_NO_INDEX = "none"
"""The index of commands that need none (``ls-tree``, ``cat-file``, ``prune``): never created."""
_MAX_EXCLUDE_BYTES = 1_000_000
_FLAGS = {"?": "A", "C": "M", "R": "D"}


@dataclass(frozen=True, slots=True)
class Scan:
    """What changed in the project since an index's snapshot.

    Attributes:
        changed: Each changed path (relative to the project) -> ``A`` (new), ``M`` or ``D``.
        large: Files over the size limit (new or changed): path -> size; never stored.
        nested: Nested repositories (``vendor/x/``): never stored.
        behind_links: Files of ``changed`` gone because a folder of their path is a link now (``rm -r
            d; ln -s elsewhere d``): ``D``, whatever is found through the link.

    """

    changed: dict[str, str] = field(default_factory=dict[str, str])
    large: dict[str, int] = field(default_factory=dict[str, int])
    nested: tuple[str, ...] = ()
    behind_links: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entry:
    """A file in a snapshot: its git mode (``100644``, ``100755``, ``120000``) and blob id."""

    mode: str
    blob: str


class ShadowRepository:
    """The shadow repository of one project.

    Args:
        data_dir: nestor's data dir.
        project_root: The project whose files are snapshotted.
        sandbox: The backend git runs under (None: what this machine has).

    """

    def __init__(self, data_dir: Path, project_root: Path, *, sandbox: Availability | None = None) -> None:
        self._sandbox = sandbox
        self.project_root = project_root.resolve()
        key = hashlib.sha256(str(self.project_root).encode()).hexdigest()[:20]
        self.git_dir = data_dir.resolve() / "checkpoints" / key
        self._data_dir = data_dir.resolve()
        repository = find_repository(self.project_root)
        self.work_tree = repository.work_tree if repository is not None else self.project_root
        relative = self.project_root.relative_to(self.work_tree).as_posix()
        self._prefix = "" if relative == "." else relative + "/"
        self._files: dict[str, str] = {}
        self._repository_exclude = (
            repository.common_dir / "info" / "exclude" if repository is not None else None
        )

    def index_file(self, name: str) -> Path:
        """The index of the session tree ``name``."""
        return self.git_dir / "indexes" / name

    def prepare(self) -> None:
        """Create the git dir when missing, and write its config and ignore rules (again).

        Each file is replaced whole, so a git of another process reading it never sees half of it.
        """
        try:
            for folder in ("objects", "refs", "info", "indexes"):
                (self.git_dir / folder).mkdir(parents=True, exist_ok=True)
            if not self._files:
                self._files = {
                    "HEAD": "ref: refs/heads/main\n",
                    "config": _CONFIG + self._snapshot_alias(),
                    "project": f"{self.project_root}\n",
                    "info/exclude": self._exclude_rules(),
                    "info/attributes": _ATTRIBUTES,
                }
            for name, text in self._files.items():
                _write_atomically(self.git_dir / name, text)
        except OSError as error:
            raise CheckpointError(
                f"cannot create the checkpoint store {self.git_dir}: {error.strerror or error}",
                hint="check the data dir's permissions and free space, or set [checkpoints] enabled = false",
            ) from error

    def seed_index(self, name: str) -> bool:
        """Start ``name``'s index from the latest one of another tree, if any; True when it was warm.

        A copied index makes the first snapshot of a new session as cheap as the next ones: only
        what changed since that other snapshot is hashed.
        """
        target = self.index_file(name)
        if target.exists():
            return True
        others = [path for path in (self.git_dir / "indexes").glob("*") if path.is_file()]
        others = [path for path in others if not path.name.endswith(".lock")]
        if not others:
            return False
        latest = max(others, key=lambda path: path.stat().st_mtime)
        with contextlib.suppress(OSError):
            shutil.copyfile(latest, target)
        return target.exists()

    @contextlib.asynccontextmanager
    async def locked(self, *, shared: bool) -> AsyncIterator[None]:
        """Hold the shadow's lock: shared while snapshotting or reading, exclusive while pruning."""
        descriptor = os.open(self.git_dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, descriptor, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # releases the lock

    async def scan(self, index: Path, max_file_bytes: int) -> Scan:
        """What changed in the project since ``index``'s snapshot (nothing is written)."""
        output = await self._git(
            index, "ls-files", "-t", "-z", "-m", "-d", "-o", "--exclude-standard", *self._pathspec()
        )
        flags: dict[str, str] = {}
        nested: list[str] = []
        for record in output.stdout.split(b"\0"):
            if len(record) < 3:
                continue
            tag, name = chr(record[0]), os.fsdecode(record[2:])
            if name.endswith("/"):
                nested.append(self._relative(name.rstrip("/")))
            elif tag in _FLAGS and flags.get(name) != "D":
                flags[name] = _FLAGS[tag]
        changed: dict[str, str] = {}
        large: dict[str, int] = {}
        behind: list[str] = []
        links: dict[str, bool] = {}
        for name, flag in flags.items():
            if _behind_link(self.work_tree, name, links):
                flag = "D"  # what a link leads to is not the project's: the file is gone from it
                behind.append(self._relative(name))
            elif (
                flag != "D" and (self.work_tree / name).is_dir() and not (self.work_tree / name).is_symlink()
            ):
                flag = "D"  # a file that became a folder: git calls it modified
            size = _size(self.work_tree / name) if flag != "D" else 0
            if size > max_file_bytes:
                large[self._relative(name)] = size
            else:
                changed[self._relative(name)] = flag
        return Scan(changed, large, tuple(nested), tuple(behind))

    async def store(self, index: Path, scan: Scan, previous_tree: str | None) -> str:
        """Record ``scan``'s changes in ``index`` and return the tree of the snapshot.

        Large files are taken out of the index (a snapshot holds no stale copy of them), and so are
        the files behind a folder that is a link now (git's ``update-index`` refuses to look
        "beyond a symbolic link"), before the link itself is added.
        """
        behind = set(scan.behind_links)
        if behind:
            removed = _nul(self._git_path(path) for path in sorted(behind))
            await self._git(index, "update-index", "--force-remove", "-z", "--stdin", stdin=removed)
        changed = {path: flag for path, flag in scan.changed.items() if path not in behind}
        update = [self._git_path(path) for path, flag in changed.items() if flag == "D"]
        update += [self._git_path(path) for path, flag in changed.items() if flag != "D"]
        if update and not scan.large:
            output = await self._git(index, _SNAPSHOT_ALIAS, stdin=_nul(update))
            return output.stdout.decode().strip().splitlines()[-1]
        if update:
            await self._git(
                index, "update-index", "--add", "--remove", "--replace", "-z", "--stdin", stdin=_nul(update)
            )
        if scan.large:
            # Tracked files that grew past the limit: absent from the index means not snapshotted.
            await self._git(
                index,
                "update-index",
                "--force-remove",
                "-z",
                "--stdin",
                stdin=_nul(map(self._git_path, scan.large)),
            )
        if not update and not scan.large and not behind and previous_tree is not None:
            return previous_tree
        return (await self._git(index, "write-tree")).stdout.decode().strip()

    async def changes(self, before: str, after: str) -> dict[str, str]:
        """What changed in the project between two snapshots' trees: path -> ``A``, ``M`` or ``D``."""
        output = await self._git(
            self.index_file(_NO_INDEX), "diff-tree", "-r", "-z", "--no-renames", "--name-status",
            before, after, *self._pathspec(),
        )  # fmt: skip
        fields = output.stdout.split(b"\0")
        found: dict[str, str] = {}
        for status, name in zip(fields[::2], fields[1::2], strict=False):
            if status and name:
                found[self._relative(os.fsdecode(name))] = {"A": "A", "D": "D"}.get(status.decode()[:1], "M")
        return found

    async def entries(self, tree: str) -> dict[str, Entry]:
        """The project's files in a snapshot: path (relative to the project) -> mode and blob."""
        output = await self._git(self.index_file(_NO_INDEX), "ls-tree", "-r", "-z", "--full-tree", tree)
        found: dict[str, Entry] = {}
        for record in output.stdout.split(b"\0"):
            header, _, name_bytes = record.partition(b"\t")
            parts = header.decode("ascii", errors="replace").split(" ")
            name = os.fsdecode(name_bytes)
            if len(parts) == 3 and parts[1] == "blob" and name.startswith(self._prefix):
                found[self._relative(name)] = Entry(parts[0], parts[2])
        return found

    async def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs by id (``cat-file --batch``).

        Raises:
            CheckpointError: A blob is missing from the shadow repository.

        """
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        output = await self._git(self.index_file(_NO_INDEX), "cat-file", "--batch", stdin=_lines(wanted))
        data, contents, position = output.stdout, {}, 0
        for blob in wanted:
            end = data.index(b"\n", position)
            header = data[position:end].split(b" ")
            if len(header) != 3:
                raise CheckpointError(
                    f"the snapshot's copy of a file is missing from {self.git_dir} ({blob})",
                    hint="the checkpoint store was pruned or damaged: this checkpoint cannot be restored",
                )
            size = int(header[2])
            contents[blob] = data[end + 1 : end + 1 + size]
            position = end + 1 + size + 1
        return contents

    async def prune(self, keep: Iterable[str], live_indexes: Iterable[str]) -> None:
        """Remove every object no tree of ``keep`` holds, and the indexes not in ``live_indexes``."""
        live = set(live_indexes)
        for path in (self.git_dir / "indexes").glob("*"):
            if path.name not in live:
                path.unlink(missing_ok=True)
        trees = sorted(set(keep))
        packed = self.git_dir / "packed-refs"
        async with self.locked(shared=False):
            packed.write_text("".join(f"{tree} refs/nestor/keep-{n}\n" for n, tree in enumerate(trees)))
            try:
                await self._git(self.index_file(_NO_INDEX), "prune", "--expire=now")
            finally:
                packed.unlink(missing_ok=True)

    def _snapshot_alias(self) -> str:
        """``git nestor-snapshot``: ``update-index`` then ``write-tree`` in one sandboxed run.

        One sandbox less per snapshot (about a third of its cost); git is named by its absolute
        path, found as :func:`run_shadow_git` finds it, so no ``git`` on the user's ``PATH`` runs.
        """
        git = find_program("git", outside=self.work_tree)
        if git is None:
            return ""
        quoted = shlex.quote(git)
        script = f"!{quoted} update-index --add --remove --replace -z --stdin && {quoted} write-tree"
        escaped = script.replace("\\", "\\\\").replace('"', '\\"')
        return f'[alias]\n\t{_SNAPSHOT_ALIAS} = "{escaped}"\n'

    def _exclude_rules(self) -> str:
        """The repository's ``info/exclude`` (ignore patterns: data) and nestor's data dir, if inside."""
        rules = ""
        if self._repository_exclude is not None:
            with contextlib.suppress(OSError):  # UnsafeFileError (a link, a FIFO) included
                rules = read_bounded_text(self._repository_exclude, limit_bytes=_MAX_EXCLUDE_BYTES).text
        if self._data_dir.is_relative_to(self.work_tree) and self._data_dir != self.work_tree:
            rules += "\n/" + _escaped(self._data_dir.relative_to(self.work_tree).as_posix()) + "/\n"
        return rules

    def _pathspec(self) -> tuple[str, ...]:
        return ("--", self._prefix.rstrip("/")) if self._prefix else ()

    def _git_path(self, path: str) -> str:
        return self._prefix + path

    def _relative(self, git_path: str) -> str:
        return git_path.removeprefix(self._prefix)

    async def _git(self, index: Path, *args: str, stdin: bytes | None = None) -> GitOutput:
        shadow = ShadowGit(self.git_dir, self.work_tree, index)
        output = await run_shadow_git(
            shadow, *args, stdin=stdin, timeout=SNAPSHOT_TIMEOUT_S, sandbox=self._sandbox
        )
        if output is None or not output.ok:
            reason = "git cannot run (is it installed?)" if output is None else _first_line(output.stderr)
            raise CheckpointError(
                f"git {args[0]} failed in the checkpoint store {self.git_dir}: {reason}",
                hint="set [checkpoints] enabled = false to work without checkpoints",
            )
        return output


def _write_atomically(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(errors="replace") == text:
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _behind_link(work_tree: Path, name: str, links: dict[str, bool]) -> bool:
    """Whether a folder of ``name``'s path is a symbolic link now (``links`` remembers each folder seen)."""
    folder = ""
    for part in name.split("/")[:-1]:
        folder = f"{folder}/{part}" if folder else part
        if folder not in links:
            try:
                links[folder] = stat.S_ISLNK((work_tree / folder).lstat().st_mode)
            except OSError:
                links[folder] = False
        if links[folder]:
            return True
    return False


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself (not a link to one)."""
    return path.is_dir() and not path.is_symlink()


def _size(path: Path) -> int:
    """A regular file's size (0 for a link or anything else, or a file gone)."""
    try:
        status = path.lstat()
    except OSError:
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


def _nul(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)


def _lines(ids: Iterable[str]) -> bytes:
    return "".join(f"{blob}\n" for blob in ids).encode()


def _escaped(path: str) -> str:
    """A path as a literal ignore pattern (its special characters escaped)."""
    return "".join("\\" + char if char in "\\*?[]!# " else char for char in path)


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else "no message"
