import struct
from pathlib import Path

import pytest

from nestor.core.errors import ProviderError
from nestor.providers.local.gguf import GGUFInfo, read_gguf_info
from tests.providers.local.gguf_writer import (
    ARRAY,
    BOOL,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    STRING,
    U8,
    U16,
    U32,
    U64,
    Value,
    gguf_bytes,
    gguf_string,
    qwen_like_kvs,
    vocabulary,
    write_gguf,
)

TENSORS = [("token_embd.weight", [64, 100]), ("blk.0.attn_norm.weight", [64]), ("output.weight", [64, 100])]


# --- reading ------------------------------------------------------------------------------------


def test_reads_the_model_description(tmp_path: Path) -> None:
    tokens = vocabulary(5000)
    path = write_gguf(tmp_path / "m.gguf", qwen_like_kvs(tokens, 3, 4999), TENSORS, tensor_data=b"\0" * 96)

    info = read_gguf_info(path)

    assert info == GGUFInfo(
        path=path,
        version=3,
        architecture="qwen2",
        name="Tiny Coder",
        size_label="1.5B",
        context_length=32768,
        chat_template="{% for m in messages %}{{ m.content }}{% endfor %}",
        bos_token=tokens[3],
        eos_token=tokens[4999],
        parameter_count=64 * 100 + 64 + 64 * 100,
        tensor_count=3,
        file_size=path.stat().st_size,
    )
    assert info.file_size > 1 << 20  # the token walk crossed at least one read chunk


@pytest.mark.parametrize("token_id", [0, 1, 2047, 2048, 2049, 3333, 4095, 4096, 4998])
def test_decodes_any_token_of_a_large_vocabulary(tmp_path: Path, token_id: int) -> None:
    tokens = vocabulary(5000)
    path = write_gguf(tmp_path / "m.gguf", qwen_like_kvs(tokens, token_id, 4999 - token_id), TENSORS)

    info = read_gguf_info(path)

    assert (info.bos_token, info.eos_token) == (tokens[token_id], tokens[4999 - token_id])


def test_token_ids_may_come_before_the_vocabulary(tmp_path: Path) -> None:
    kvs: list[tuple[str, int, Value]] = [
        ("tokenizer.ggml.eos_token_id", I32, 2),
        ("general.architecture", STRING, "llama"),
        ("tokenizer.ggml.bos_token_id", U64, 1),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<unk>", "<s>", "</s>", "é✓"])),
        ("llama.context_length", U64, 4096),
    ]
    info = read_gguf_info(write_gguf(tmp_path / "m.gguf", kvs, version=2))

    assert (info.version, info.architecture, info.context_length) == (2, "llama", 4096)
    assert (info.bos_token, info.eos_token) == ("<s>", "</s>")


def test_absent_and_unusable_optional_values_are_none(tmp_path: Path) -> None:
    kvs: list[tuple[str, int, Value]] = [
        ("general.architecture", STRING, "gpt2"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, ["a", "b"])),
        ("tokenizer.ggml.bos_token_id", U32, 2),  # out of range
        ("tokenizer.ggml.eos_token_id", BOOL, True),  # not an integer
        ("gpt2.context_length", STRING, "1024"),  # not an integer
    ]
    info = read_gguf_info(write_gguf(tmp_path / "m.gguf", kvs))

    assert (info.name, info.size_label, info.context_length, info.chat_template) == (None, None, None, None)
    assert (info.bos_token, info.eos_token) == (None, None)
    assert (info.parameter_count, info.tensor_count) == (0, 0)


def test_every_value_type_is_stepped_over_correctly(tmp_path: Path) -> None:
    kvs: list[tuple[str, int, Value]] = [
        ("a.u8", U8, 255),
        ("a.i8", I8, -1),
        ("a.u16", U16, 65535),
        ("a.i16", I16, -2),
        ("a.u32", U32, 7),
        ("a.i32", I32, -7),
        ("a.f32", F32, 0.5),
        ("a.bool", BOOL, False),
        ("a.u64", U64, 2**63),
        ("a.i64", I64, -(2**40)),
        ("a.f64", F64, 2.5),
        ("a.floats", ARRAY, (F64, [1.0, 2.0, 3.0])),
        ("a.bytes", ARRAY, (U8, [1, 2, 3, 4, 5])),
        ("a.nested", ARRAY, (ARRAY, [(STRING, ["x", "yz"]), (U16, [1, 2, 3])])),
        ("a.empty", ARRAY, (STRING, [])),
        ("general.architecture", STRING, "phi3"),
        ("phi3.context_length", U32, 131072),
    ]
    info = read_gguf_info(write_gguf(tmp_path / "m.gguf", kvs, [("w", [3, 4, 5])]))

    assert (info.architecture, info.context_length, info.parameter_count) == ("phi3", 131072, 60)


# --- errors -------------------------------------------------------------------------------------


def test_a_file_that_is_not_gguf_is_a_provider_error(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x08\x00\x00\x00{}")

    with pytest.raises(ProviderError) as caught:
        read_gguf_info(path)

    assert str(path) in caught.value.message and "not a GGUF" in caught.value.message
    assert caught.value.hint and "\n" not in caught.value.message


def test_an_unsupported_version_is_a_provider_error(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "old.gguf", [("general.architecture", STRING, "llama")], version=1)

    with pytest.raises(ProviderError, match="version 1"):
        read_gguf_info(path)


def test_a_missing_file_or_a_directory_is_a_provider_error(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.gguf", tmp_path):
        with pytest.raises(ProviderError) as caught:
            read_gguf_info(path)
        assert str(path) in caught.value.message and caught.value.hint


def test_a_header_without_architecture_is_a_provider_error(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", [("general.name", STRING, "x")])

    with pytest.raises(ProviderError, match=r"general\.architecture"):
        read_gguf_info(path)


def test_an_unknown_value_type_is_a_provider_error(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    architecture = gguf_string("general.architecture") + struct.pack("<I", STRING) + gguf_string("llama")
    bad = gguf_string("bad.key") + struct.pack("<I", 99) + b"\0" * 8
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + architecture + bad)

    with pytest.raises(ProviderError, match=r"malformed.*value type 99"):
        read_gguf_info(path)


def test_a_truncated_header_is_a_provider_error_wherever_it_ends(tmp_path: Path) -> None:
    data = gguf_bytes(qwen_like_kvs(vocabulary(3000), 1, 2), TENSORS)
    path = tmp_path / "cut.gguf"
    for cut in (3, 5, 20, 40, 1000, len(data) // 2, len(data) - 200, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(ProviderError) as caught:
            read_gguf_info(path)
        assert "truncated" in caught.value.message or "not a GGUF" in caught.value.message, cut
        assert str(path) in caught.value.message


def test_an_absurd_string_length_is_reported_as_truncated_not_allocated(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**62) + b"abc")

    with pytest.raises(ProviderError, match="truncated"):
        read_gguf_info(path)


def test_the_header_alone_is_enough(tmp_path: Path) -> None:
    # No tensor data at all after the tensor infos: the reader never needs it.
    path = write_gguf(tmp_path / "m.gguf", qwen_like_kvs(vocabulary(10), 0, 9), TENSORS)

    assert read_gguf_info(path).parameter_count == 12864
