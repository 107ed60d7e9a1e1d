"""A small GGUF writer for tests: the format as the spec draws it, independent of nestor's reader.

Files written here hold only a header (metadata and tensor shapes, no weights), which is all nestor
reads before a model's first request: enough to build a local model without loading it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_FORMATS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?"}
_FORMATS |= {U64: "<Q", I64: "<q", F64: "<d"}

Value: TypeAlias = "int | float | bool | str | tuple[int, Sequence[Value]]"
Tensors: TypeAlias = Sequence[tuple[str, Sequence[int]]]

QWEN_TEMPLATE_PATH = Path(__file__).parent / "fixtures" / "qwen2.5-coder-chat-template.jinja"
# Shapes only: a 1.5B model (compact) and an 8B one (not compact), as their headers describe them.
COMPACT_TENSORS: Tensors = [("token_embd.weight", [50_000, 30_000])]
LARGE_TENSORS: Tensors = [("token_embd.weight", [100_000, 80_000])]
CHAT_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "hello"]


def gguf_string(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def encode_value(kind: int, value: Value) -> bytes:
    if kind == STRING:
        assert isinstance(value, str)
        return gguf_string(value)
    if kind == ARRAY:
        assert isinstance(value, tuple)
        element_kind, elements = value
        body = b"".join(encode_value(element_kind, element) for element in elements)
        return struct.pack("<IQ", element_kind, len(elements)) + body
    return struct.pack(_FORMATS[kind], value)


def gguf_bytes(
    kvs: Sequence[tuple[str, int, Value]],
    tensors: Tensors = (),
    *,
    version: int = 3,
    tensor_data: bytes = b"",
) -> bytes:
    out = [b"GGUF", struct.pack("<IQQ", version, len(tensors), len(kvs))]
    for key, kind, value in kvs:
        out += [gguf_string(key), struct.pack("<I", kind), encode_value(kind, value)]
    for index, (name, dims) in enumerate(tensors):
        out += [gguf_string(name), struct.pack("<I", len(dims)), struct.pack(f"<{len(dims)}Q", *dims)]
        out += [struct.pack("<IQ", 12, index * 32)]
    return b"".join(out) + tensor_data


def write_gguf(
    path: Path,
    kvs: Sequence[tuple[str, int, Value]],
    tensors: Tensors = (),
    *,
    version: int = 3,
    tensor_data: bytes = b"",
) -> Path:
    path.write_bytes(gguf_bytes(kvs, tensors, version=version, tensor_data=tensor_data))
    return path


def vocabulary(count: int) -> list[str]:
    # Lengths vary from 5 to ~500 bytes so walks cross the reader's chunk borders at odd places.
    return [f"tok{i}:" + "x" * (i * 7919 % 500) for i in range(count)]


def qwen_like_kvs(tokens: Sequence[str], bos: int, eos: int) -> list[tuple[str, int, Value]]:
    return [
        ("general.architecture", STRING, "qwen2"),
        ("general.name", STRING, "Tiny Coder"),
        ("general.size_label", STRING, "1.5B"),
        ("qwen2.context_length", U32, 32768),
        ("qwen2.rope.freq_base", F32, 1000000.0),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * len(tokens))),
        ("tokenizer.ggml.merges", ARRAY, (STRING, [f"m {i}" for i in range(3000)])),
        ("tokenizer.ggml.bos_token_id", U32, bos),
        ("tokenizer.ggml.eos_token_id", U32, eos),
        ("tokenizer.chat_template", STRING, "{% for m in messages %}{{ m.content }}{% endfor %}"),
        ("general.quantization_version", U32, 2),
    ]


def qwen_chat_template() -> str:
    return QWEN_TEMPLATE_PATH.read_text(encoding="utf-8")


def write_chat_gguf(
    path: Path,
    tensors: Tensors = COMPACT_TENSORS,
    *,
    context_length: int | None = 32_768,
    chat_template: str | None = None,
    architecture: str = "qwen2",
) -> Path:
    """A chat model's header: architecture, trained context, Qwen's template, tokens and tensor shapes.

    ``chat_template`` defaults to the real Qwen2.5-Coder template; pass ``""`` for a file without one.
    """
    template = qwen_chat_template() if chat_template is None else chat_template
    kvs: list[tuple[str, int, Value]] = [("general.architecture", STRING, architecture)]
    if context_length is not None:
        kvs.append((f"{architecture}.context_length", U32, context_length))
    kvs += [
        ("tokenizer.ggml.tokens", ARRAY, (STRING, CHAT_TOKENS)),
        ("tokenizer.ggml.bos_token_id", U32, 0),
        ("tokenizer.ggml.eos_token_id", U32, 2),
    ]
    if template:
        kvs.append(("tokenizer.chat_template", STRING, template))
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_gguf(path, kvs, tensors)
