"""The calls a question quotes in a JavaScript package, run with Node: what ``f(x)`` returns, for real.

The JavaScript side of :mod:`.calls`: "what does `bytes.format(1536)` return?" is answered by
running it. A call is run only when it is made of literals (strings, numbers, arrays, objects,
``true``/``false``/``null``), member accesses and calls, and its first name is the package
itself (``bytes`` for a package named ``bytes``) or a name its main module exports: the script
requires the package from the project's folder and prints the result with ``util.inspect``, or
the error thrown. Nothing but what the user wrote is called.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from nestor.runtime.features.small.gathering.calls import call_texts
from nestor.runtime.features.small.gathering.languages import parse
from nestor.runtime.features.small.gathering.reader import ProjectReader

_ALLOWED = frozenset(
    {
        "program",
        "expression_statement",
        "parenthesized_expression",
        "call_expression",
        "member_expression",
        "arguments",
        "identifier",
        "property_identifier",
        "shorthand_property_identifier",
        "string",
        "string_fragment",
        "escape_sequence",
        "number",
        "array",
        "object",
        "pair",
        "true",
        "false",
        "null",
        "undefined",
        "unary_expression",
    }
)
_UNSAFE_PROPERTIES = frozenset(
    {"constructor", "prototype", "__proto__", "__defineGetter__", "call", "apply", "bind"}
)
"""Members that reach past the package's own functions (``f.constructor("code")()`` runs code)."""
_EXPORT = re.compile(r"(?:module\.)?exports\.([A-Za-z_$][\w$]*)\s*=|module\.exports\s*=\s*\{([^}]*)\}")


@dataclass(frozen=True, slots=True)
class NodeCall:
    """A call to run: the expression as the user wrote it, and the script that prints its result."""

    expression: str
    script: str


def node_calls(prompt: str, reader: ProjectReader) -> list[NodeCall]:
    """The calls of ``prompt`` that may run in this JavaScript package (see the module docstring)."""
    package = _package(reader)
    if package is None:
        return []
    name, exports = package
    found: list[NodeCall] = []
    for text in call_texts(prompt):
        roots = _roots(text)
        if roots is None or not roots or not roots <= ({name} | exports):
            continue
        bindings = [f"const {name} = __package;"] if name in roots else []
        bindings += [f"const {root} = __package.{root};" for root in sorted(roots - {name})]
        script = (
            "const __package = require(process.cwd()); const __util = require('util'); "
            + " ".join(bindings)
            + f" try {{ console.log(__util.inspect({text}, {{ depth: 4 }})); }}"
            " catch (error) { console.log(`${error.name}: ${error.message}`); }"
        )
        found.append(NodeCall(text, script))
    return found


def _package(reader: ProjectReader) -> tuple[str, set[str]] | None:
    """The package's name as an identifier, and the names its main module exports."""
    text = reader.read_text("package.json")
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    raw = str(data.get("name") or "").rsplit("/", 1)[-1]  # type: ignore[union-attr]
    name = re.sub(r"\W", "_", raw)
    main = str(data.get("main") or "index.js")  # type: ignore[union-attr]
    source = reader.read_text(main.removeprefix("./")) or ""
    exports: set[str] = set()
    for match in _EXPORT.finditer(source):
        if match.group(1):
            exports.add(match.group(1))
        else:
            exports.update(part.split(":")[0].strip() for part in match.group(2).split(",") if part.strip())
    return (name, exports) if name.isidentifier() else None


def _roots(text: str) -> set[str] | None:
    """The first names of ``text``'s member chains and calls; None when it is more than a plain call."""
    tree = parse("call.js", f"({text});")
    if tree is None or tree.root_node.has_error:
        return None
    roots: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_named and node.type not in _ALLOWED and node.type != "comment":
            return None
        name = node.text.decode() if node.text else ""
        if node.type == "property_identifier" and name in _UNSAFE_PROPERTIES:
            return None
        if node.type == "identifier" and name != "undefined":
            parent = node.parent
            member = parent is not None and parent.type == "member_expression"
            if parent is None or not member or parent.child_by_field_name("object") == node:
                roots.add(name)
        stack.extend(node.children)
    return roots
