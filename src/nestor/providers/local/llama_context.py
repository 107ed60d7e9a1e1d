"""llama.cpp's context through its C API: prompt tokens, the KV cells of a prefix, FIM markers.

The engine (:mod:`~nestor.providers.local.engine`) calls these on its worker thread only:
llama.cpp's context is not thread-safe. llama.cpp is imported inside each function, when a model
is loaded already.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nestor.providers.local.text_engine import InfillMarkers

if TYPE_CHECKING:
    from llama_cpp import Llama


def tokenize(llama: Llama, text: str) -> list[int]:
    """``text``'s tokens as llama-cpp-python would prompt them: BOS when the model wants one, once."""
    tokens = llama.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    bos = llama.token_bos()
    if len(tokens) >= 2 and tokens[0] == tokens[1] == bos:
        del tokens[0]  # the chat template printed the BOS itself
    return tokens


def find_infill_markers(llama: Llama) -> InfillMarkers | None:
    """The model's fill-in-the-middle tokens from its vocabulary; None when it has none."""
    import llama_cpp

    api: Any = llama_cpp  # its ctypes declarations type token ids as c_int32; they come back as int
    vocabulary = api.llama_model_get_vocab(llama.model)
    tokens: list[int] = [
        int(api.llama_vocab_fim_pre(vocabulary)),
        int(api.llama_vocab_fim_suf(vocabulary)),
        int(api.llama_vocab_fim_mid(vocabulary)),
    ]
    if min(tokens) < 0:
        return None
    texts = [llama.detokenize([token], special=True).decode("utf-8", "replace") for token in tokens]
    # The prompt is tokenized as text: each marker must come back as its one special token.
    if any(_tokenize_special(llama, text) != [token] for text, token in zip(texts, tokens, strict=True)):
        return None
    return InfillMarkers(*texts)


def _tokenize_special(llama: Llama, text: str) -> list[int]:
    return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)


def common_prefix(llama: Llama, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` the context holds already, from the start."""
    import numpy as np

    held = llama.input_ids[: llama.n_tokens]
    length = min(len(held), len(tokens))
    differ = np.flatnonzero(held[:length] != np.asarray(tokens[:length], dtype=held.dtype))
    return int(differ[0]) if differ.size else length


def snapshot(llama: Llama) -> bytearray | None:
    """The KV cells of sequence 0 (the only one), as llama.cpp serialises them; None if it cannot."""
    import llama_cpp

    sequence = llama_cpp.llama_seq_id(0)
    size = llama_cpp.llama_state_seq_get_size(llama.ctx, sequence)
    if size <= 0:
        return None
    state = bytearray(size)
    buffer = (ctypes.c_uint8 * size).from_buffer(state)
    written = llama_cpp.llama_state_seq_get_data(llama.ctx, buffer, size, sequence)
    del buffer  # releases the export, so the bytearray may shrink
    if written <= 0:
        return None
    del state[written:]
    return state


def restore(llama: Llama, prefix: list[int], state: bytearray) -> bool:
    """Replace the context with ``state``, the saved cells of ``prefix``; False if llama.cpp refuses it."""
    import llama_cpp

    memory = llama_cpp.llama_get_memory(llama.ctx)
    llama.n_tokens = 0
    if memory is not None:
        llama_cpp.llama_memory_clear(memory, True)
    buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
    if llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(state), llama_cpp.llama_seq_id(0)) == 0:
        if memory is not None:
            llama_cpp.llama_memory_clear(memory, True)
        return False
    llama.input_ids[: len(prefix)] = prefix
    llama.n_tokens = len(prefix)
    return True


def engine_version() -> str:
    """The version of llama-cpp-python (a prefix's saved state is only valid for the same one)."""
    import llama_cpp

    return str(llama_cpp.__version__)
