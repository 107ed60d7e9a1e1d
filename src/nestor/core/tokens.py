"""A tokenizer-free token estimate, shared by everything that sizes text for a context window.

Providers tokenize differently and their tokenizers are slow to load (or not public), while the
decisions made with this estimate (is a tool result too big to show, is the history near the limit)
only need to be roughly right and the same everywhere. Four characters per token is the usual rule
of thumb for English and code; it overestimates for plain prose and underestimates for dense
non-Latin text.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens ``text`` takes: its characters divided by four, rounded up.

    Args:
        text: Any text.

    Returns:
        The estimate; 0 only for the empty string.

    """
    return -(-len(text) // CHARS_PER_TOKEN)


__all__ = ["CHARS_PER_TOKEN", "estimate_tokens"]
