"""Reading text files for ``view`` and ``edit``: size limit, binary detection, helpful misses."""

from __future__ import annotations

import difflib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from nestor.core.errors import ToolError
from nestor.core.files import (
    FileTooLargeError,
    LinkInPathError,
    UnsafeFileError,
    read_bounded_bytes,
    write_regular_file,
)

MAX_TEXT_FILE_BYTES = 5 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
UTF8_BOM = b"\xef\xbb\xbf"

_MAGIC_NUMBERS: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"BM", "a BMP image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or a format built on ZIP, such as .docx, .jar or .whl)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an ELF executable or library"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x00asm", "a WebAssembly module"),
)


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded UTF-8 text file.

    Attributes:
        text: The content, without a byte-order mark.
        has_bom: True when the file starts with a UTF-8 byte-order mark (to write it back).

    """

    text: str
    has_bom: bool

    def encode(self, text: str) -> bytes:
        """Encode ``text`` the way this file was stored (keeping its byte-order mark)."""
        return (UTF8_BOM if self.has_bom else b"") + text.encode("utf-8")


def read_text_file(path: Path, shown_as: str, *, resolved: bool = True) -> TextFile:
    """Read ``path`` as UTF-8 text, refusing what a model should not see as text.

    Args:
        path: An absolute path.
        shown_as: How to name the file in error messages.
        resolved: ``path`` is the resolved path a permission judged (``ToolContext.resolve``): it
            is read without following any link. False resolves it first (a path a server named).

    Raises:
        ToolError: The file is missing, a directory, a FIFO or device, over 5 MB, binary or not UTF-8,
            or a link appeared in its path after it was judged.

    """
    if path.is_dir():
        raise ToolError(f"{shown_as} is a directory, not a file; use the ls tool to list it.")
    try:
        data = read_bounded_bytes(path, limit_bytes=MAX_TEXT_FILE_BYTES, whole=True, resolved=resolved).data
    except FileNotFoundError:
        raise missing_file_error(path, shown_as) from None
    except LinkInPathError as exc:
        raise link_error("read", shown_as, exc) from None
    except UnsafeFileError as exc:
        raise special_file_error(shown_as, exc.kind, "only regular files can be read") from None
    except FileTooLargeError as exc:
        raise ToolError(
            f"{shown_as} is {exc.size / 1_048_576:.1f} MB, over the 5 MB limit for reading files; "
            "use the grep tool to find the parts you need."
        ) from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown_as}: {exc.strerror or exc}.") from None
    kind = binary_kind(path, data[:BINARY_SNIFF_BYTES])
    if kind is not None:
        raise ToolError(f"{shown_as} is {kind}, not a text file; only text files can be read.")
    has_bom = data.startswith(UTF8_BOM)
    try:
        text = data[len(UTF8_BOM) if has_bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown_as} is not valid UTF-8 text (bad byte at offset {exc.start}); it may be binary "
            "or in another encoding, which this tool cannot read."
        ) from None
    return TextFile(text=text, has_bom=has_bom)


def link_error(verb: str, shown_as: str, error: LinkInPathError) -> ToolError:
    """The error for a path a command changed into a link after its permission was checked."""
    return ToolError(
        f"Cannot {verb} {shown_as}: {error.strerror}, so nothing was done (a command may be changing "
        "it); look at it again before retrying."
    )


def special_file_error(shown_as: str, kind: str | None, what_to_do: str) -> ToolError:
    """The error for a path that is a FIFO, a device or a socket rather than a regular file."""
    return ToolError(f"{shown_as} is {kind or 'a special file'}, not a regular file; {what_to_do}.")


def binary_kind(path: Path, head: bytes) -> str | None:
    """Name the kind of binary file ``head`` (the first bytes of ``path``) starts, or None for text."""
    for magic, kind in _MAGIC_NUMBERS:
        if head.startswith(magic) and (magic != b"BM" or b"\x00" in head):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "a WebP image"
    if b"\x00" not in head:
        return None
    guessed, _ = mimetypes.guess_type(path.name)
    if guessed is not None:
        family = {"image": "an image", "audio": "an audio file", "video": "a video"}.get(
            guessed.split("/")[0], "a binary file"
        )
        return f"{family} ({guessed})"
    return "a binary file"


def split_lines(text: str) -> list[str]:
    r"""Split ``text`` into lines on ``\n`` only (as grep counts them), dropping each ``\r``."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def missing_file_error(path: Path, shown_as: str) -> ToolError:
    """Build the error for a missing file, suggesting similar names from its directory."""
    directory = path.parent
    if not directory.is_dir():
        return ToolError(
            f"{shown_as} does not exist, nor does its directory; check the path with ls or glob."
        )
    suggestions = similar_names(path)
    if suggestions:
        listed = ", ".join(str(directory / name) for name in suggestions)
        return ToolError(f"{shown_as} does not exist. Did you mean: {listed}?")
    return ToolError(f"{shown_as} does not exist; check the path with ls or glob.")


def similar_names(path: Path, limit: int = 3) -> list[str]:
    """Return up to ``limit`` names in ``path``'s directory that look like its name."""
    try:
        names = sorted(entry.name for entry in path.parent.iterdir())
    except OSError:
        return []
    stem = path.stem.lower()
    close = difflib.get_close_matches(path.name, names, n=limit, cutoff=0.6)
    related = [name for name in names if len(stem) >= 2 and stem in name.lower()]
    ordered = list(dict.fromkeys([*close, *related]))
    return ordered[:limit]


def unified_diff(before: str, after: str, shown_as: str) -> str:
    """Return a unified diff of two versions of a file, line endings left out."""
    lines = difflib.unified_diff(
        split_lines(before), split_lines(after), fromfile=f"a/{shown_as}", tofile=f"b/{shown_as}", lineterm=""
    )
    return "\n".join(lines)


def write_bytes(path: Path, data: bytes, shown_as: str) -> None:
    """Write ``data`` to the resolved ``path`` a permission judged, creating missing parent directories.

    No link is followed on the way, so the write lands at that path or nowhere.

    Raises:
        ToolError: A parent is a file, the file is a FIFO or device, a link appeared in its path,
            or it cannot be written.

    """
    try:
        write_regular_file(path, data, resolved=True, make_parents=True)
    except LinkInPathError as exc:
        raise link_error("write", shown_as, exc) from None
    except UnsafeFileError as exc:
        raise ToolError(
            f"Cannot write {shown_as}: it is {exc.kind or 'a special file'}, not a regular file; "
            "write to a regular file instead."
        ) from None
    except (FileExistsError, NotADirectoryError):
        raise ToolError(
            f"Cannot write {shown_as}: part of its directory path is a file, not a directory."
        ) from None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown_as}: {exc.strerror or exc}.") from None
