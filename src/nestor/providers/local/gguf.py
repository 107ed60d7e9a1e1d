"""Read the header of a GGUF model file: what the model is, without llama.cpp and without its weights.

A GGUF file (llama.cpp's format, versions 2 and 3, little-endian) starts with::

    "GGUF"  uint32 version  uint64 tensor_count  uint64 kv_count
    kv_count x (string key, uint32 value type, value)
    tensor_count x (string name, uint32 n_dims, n_dims x uint64 dim, uint32 ggml type, uint64 offset)

where a string is a uint64 byte length and UTF-8 bytes, and an array value is a uint32 element
type, a uint64 count and the elements. The tensor data follows and is never read here.

The vocabulary arrays are large (151,936 tokens and 151,387 merges for Qwen2.5), so the reader
walks arrays of strings by their lengths without decoding them, and later decodes only the two
tokens it needs (BOS and EOS). It reads the file in 1 MB chunks, a few megabytes in all.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeAlias

from nestor.core.errors import ProviderError

_MAGIC = b"GGUF"
_SUPPORTED_VERSIONS = frozenset({2, 3})
_CHUNK = 1 << 20
_STRING = 8
_ARRAY = 9
# Value type -> struct format of one scalar (all little-endian).
_SCALAR_FORMATS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_SCALAR_SIZES = {kind: struct.calcsize(fmt) for kind, fmt in _SCALAR_FORMATS.items()}
_TOKENS_KEY = "tokenizer.ggml.tokens"
_TOKEN_STRIDE = 2048  # tokens between two remembered offsets: a token lookup walks fewer than this
_U64 = struct.Struct("<Q")

_Scalar: TypeAlias = int | float | bool | str


@dataclass(frozen=True, slots=True)
class GGUFInfo:
    """What a GGUF file's header says about its model.

    Attributes:
        path: The file read.
        version: The GGUF format version (2 or 3).
        architecture: ``general.architecture``, e.g. ``"qwen2"`` or ``"llama"``.
        name: ``general.name``, if present.
        size_label: ``general.size_label`` (e.g. ``"1.5B"``), if present.
        context_length: ``<architecture>.context_length``: the longest context it was trained for.
        chat_template: ``tokenizer.chat_template`` (Jinja), if present.
        bos_token: The text of the beginning-of-sequence token, if the file names one.
        eos_token: The text of the end-of-sequence token, if the file names one.
        parameter_count: Sum over all tensors of the product of their dimensions.
        tensor_count: How many tensors the file holds.
        file_size: The file's size in bytes.

    """

    path: Path
    version: int
    architecture: str
    name: str | None
    size_label: str | None
    context_length: int | None
    chat_template: str | None
    bos_token: str | None
    eos_token: str | None
    parameter_count: int
    tensor_count: int
    file_size: int


class _Truncated(Exception):
    """The file ended inside the header."""


class _Malformed(Exception):
    """The header holds a value no valid GGUF file can hold."""


class _Cursor:
    """Sequential little-endian reads over a file, buffered in chunks, with a known absolute offset."""

    def __init__(self, file: BinaryIO, file_size: int) -> None:
        self._file = file
        self._file_size = file_size
        self._buf = b""
        self._pos = 0
        self._base = 0  # absolute file offset of self._buf[0]

    @property
    def offset(self) -> int:
        return self._base + self._pos

    def seek(self, offset: int) -> None:
        self._file.seek(offset)
        self._buf, self._pos, self._base = b"", 0, offset

    def _ensure(self, n: int) -> None:
        if self._pos + n <= len(self._buf):
            return
        if self.offset + n > self._file_size:
            raise _Truncated
        rest = self._buf[self._pos :]
        self._base += self._pos
        self._buf = rest + self._file.read(max(n - len(rest), _CHUNK))
        self._pos = 0
        if len(self._buf) < n:
            raise _Truncated

    def unpack(self, fmt: str, size: int) -> tuple[int | float | bool, ...]:
        self._ensure(size)
        values = struct.unpack_from(fmt, self._buf, self._pos)
        self._pos += size
        return values

    def u32(self) -> int:
        return int(self.unpack("<I", 4)[0])

    def u64(self) -> int:
        return int(self.unpack("<Q", 8)[0])

    def u64s(self, count: int) -> tuple[int, ...]:
        self._ensure(8 * count)
        values = struct.unpack_from(f"<{count}Q", self._buf, self._pos)
        self._pos += 8 * count
        return values

    def raw(self, n: int) -> bytes:
        self._ensure(n)
        data = self._buf[self._pos : self._pos + n]
        self._pos += n
        return data

    def string(self) -> str:
        return self.raw(self.u64()).decode("utf-8", errors="replace")

    def skip(self, n: int) -> None:
        if self.offset + n > self._file_size:
            raise _Truncated
        if self._pos + n <= len(self._buf):
            self._pos += n
        else:
            self.seek(self.offset + n)

    def skip_strings(self, count: int) -> None:
        """Step over ``count`` strings, reading only their lengths (the hot loop of the reader)."""
        length_at = _U64.unpack_from
        remaining = count
        while remaining:
            buf, pos = self._buf, self._pos
            end = len(buf)
            done = 0
            # Walk as far as the current chunk allows: no method call per string.
            for done in range(remaining):  # noqa: B007 (done is the count walked)
                if pos + 8 > end:
                    break
                next_pos = pos + 8 + length_at(buf, pos)[0]
                if next_pos > end:
                    break
                pos = next_pos
            else:
                done = remaining
            self._pos = pos
            remaining -= done
            if remaining:  # the next string straddles the chunk's end
                self.skip(self.u64())
                remaining -= 1


@dataclass(frozen=True, slots=True)
class _Vocabulary:
    """Where the token strings are: every ``_TOKEN_STRIDE``-th one's offset, to decode any token later."""

    count: int
    checkpoints: list[int]

    @classmethod
    def walk(cls, cursor: _Cursor, count: int) -> _Vocabulary:
        checkpoints: list[int] = []
        for start in range(0, count, _TOKEN_STRIDE):
            checkpoints.append(cursor.offset)
            cursor.skip_strings(min(_TOKEN_STRIDE, count - start))
        return cls(count, checkpoints)

    def token(self, cursor: _Cursor, index: int) -> str:
        cursor.seek(self.checkpoints[index // _TOKEN_STRIDE])
        cursor.skip_strings(index % _TOKEN_STRIDE)
        return cursor.string()


def read_gguf_info(path: Path) -> GGUFInfo:
    """Read a GGUF file's header: metadata, special tokens and tensor shapes, never tensor data.

    Args:
        path: The ``.gguf`` file.

    Returns:
        The model's description.

    Raises:
        ProviderError: The file cannot be read, is not GGUF (or a version other than 2 or 3),
            is truncated, or its header is malformed.

    """
    try:
        with path.open("rb") as file:
            file_size = os.fstat(file.fileno()).st_size
            return _read(path, file, file_size)
    except OSError as error:
        raise ProviderError(
            f"cannot read the model file {path}: {error.strerror or error}",
            hint="check that the path exists and is a readable .gguf file",
        ) from error
    except _Truncated:
        raise ProviderError(
            f"the model file {path} is truncated: it ends inside its GGUF header",
            hint="the file is incomplete; download or copy it again",
        ) from None
    except _Malformed as error:
        raise ProviderError(
            f"the model file {path} has a malformed GGUF header: {error}",
            hint="the file is damaged; download or copy it again",
        ) from None


def _read(path: Path, file: BinaryIO, file_size: int) -> GGUFInfo:
    cursor = _Cursor(file, file_size)
    magic = file.read(4)
    if magic != _MAGIC:
        raise ProviderError(
            f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF')",
            hint="pass a llama.cpp .gguf file; convert other formats with llama.cpp's convert_hf_to_gguf.py",
        )
    cursor.seek(4)
    version = cursor.u32()
    if version not in _SUPPORTED_VERSIONS:
        raise ProviderError(
            f"{path} is GGUF version {version}; nestor reads versions 2 and 3",
            hint="re-convert the model with a current llama.cpp",
        )
    tensor_count, kv_count = cursor.u64(), cursor.u64()
    metadata: dict[str, _Scalar] = {}
    vocabulary: _Vocabulary | None = None
    for _ in range(kv_count):
        key = cursor.string()
        kind = cursor.u32()
        if kind != _ARRAY:
            metadata[key] = _scalar(cursor, kind)
            continue
        element_kind, count = cursor.u32(), cursor.u64()
        if key == _TOKENS_KEY and element_kind == _STRING:
            vocabulary = _Vocabulary.walk(cursor, count)
        else:
            _skip_array(cursor, element_kind, count)
    parameter_count = _parameter_count(cursor, tensor_count)
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str):
        raise _Malformed("it has no general.architecture")
    return GGUFInfo(
        path=path,
        version=version,
        architecture=architecture,
        name=_text(metadata.get("general.name")),
        size_label=_text(metadata.get("general.size_label")),
        context_length=_integer(metadata.get(f"{architecture}.context_length")),
        chat_template=_text(metadata.get("tokenizer.chat_template")),
        bos_token=_token(cursor, vocabulary, metadata.get("tokenizer.ggml.bos_token_id")),
        eos_token=_token(cursor, vocabulary, metadata.get("tokenizer.ggml.eos_token_id")),
        parameter_count=parameter_count,
        tensor_count=tensor_count,
        file_size=file_size,
    )


def _scalar(cursor: _Cursor, kind: int) -> _Scalar:
    if kind == _STRING:
        return cursor.string()
    fmt = _SCALAR_FORMATS.get(kind)
    if fmt is None:
        raise _Malformed(f"unknown value type {kind} at byte {cursor.offset - 4}")
    return cursor.unpack(fmt, _SCALAR_SIZES[kind])[0]


def _skip_array(cursor: _Cursor, element_kind: int, count: int) -> None:
    if element_kind == _STRING:
        cursor.skip_strings(count)
    elif element_kind == _ARRAY:
        for _ in range(count):
            nested_kind, nested_count = cursor.u32(), cursor.u64()
            _skip_array(cursor, nested_kind, nested_count)
    elif element_kind in _SCALAR_SIZES:
        cursor.skip(count * _SCALAR_SIZES[element_kind])
    else:
        raise _Malformed(f"unknown array element type {element_kind} at byte {cursor.offset - 12}")


def _parameter_count(cursor: _Cursor, tensor_count: int) -> int:
    total = 0
    for _ in range(tensor_count):
        cursor.skip(cursor.u64())  # the tensor's name
        n_dims = cursor.u32()
        if n_dims > 8:  # GGML_MAX_DIMS is 4; anything far beyond is a damaged header
            raise _Malformed(f"a tensor with {n_dims} dimensions at byte {cursor.offset - 4}")
        total += math.prod(cursor.u64s(n_dims))
        cursor.skip(4 + 8)  # ggml type, data offset
    return total


def _token(cursor: _Cursor, vocabulary: _Vocabulary | None, token_id: _Scalar | None) -> str | None:
    index = _integer(token_id)
    if vocabulary is None or index is None or not 0 <= index < vocabulary.count:
        return None
    return vocabulary.token(cursor, index)


def _text(value: _Scalar | None) -> str | None:
    return value if isinstance(value, str) else None


def _integer(value: _Scalar | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
