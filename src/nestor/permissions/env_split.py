r"""``env -S STRING``: the words GNU env splits its string into, as it splits them.

``env -S 'rm -f x'`` runs ``rm -f x``: env splits the string on blanks, with single and double
quotes, backslash escapes (``\\_`` is a space inside double quotes and a separator outside,
``\\c`` ends the string) and ``#`` comments. It also expands ``${NAME}``, whose value is not known
here: such a string is not split (None), and neither is one env would refuse.
"""

from __future__ import annotations

_BLANKS = " \t\n\v\f\r"
_ESCAPES = {
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "#": "#",
    "$": "$",
    "\\": "\\",
    '"': '"',
    "'": "'",
}


def split_env_string(text: str) -> list[str] | None:
    """The words of ``text`` as ``env -S`` splits them, or None when they are not known statically."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    quote = ""
    index = 0
    while index < len(text):
        char = text[index]
        if quote == "'":
            if char == "'":
                quote = ""
            elif char == "\\" and text[index + 1 : index + 2] in ("\\", "'"):
                current.append(text[index + 1])
                index += 1
            else:
                current.append(char)
        elif char == "$":
            return None  # ${NAME}: the environment's value
        elif char == "\\":
            escaped = text[index + 1 : index + 2]
            if escaped == "c" and not quote:
                break
            if escaped == "_":
                if quote:
                    current.append(" ")
                elif in_word:
                    words.append("".join(current))
                    current, in_word = [], False
                index += 2
                continue
            if escaped not in _ESCAPES:
                return None  # env refuses the string
            current.append(_ESCAPES[escaped])
            in_word = True
            index += 1
        elif quote:  # inside double quotes
            if char == '"':
                quote = ""
            else:
                current.append(char)
        elif char in "'\"":
            quote, in_word = char, True
        elif char in _BLANKS:
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        elif char == "#" and not in_word:
            break
        else:
            current.append(char)
            in_word = True
        index += 1
    if quote:
        return None
    if in_word:
        words.append("".join(current))
    return words
