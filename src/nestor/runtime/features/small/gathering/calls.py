"""The calls a question quotes, run: what ``f(x)`` returns is best answered by calling it.

"What does ``Version.parse("1.0.0-rc.1").compare("1.0.0")`` return?" asks a small model to run
the code in its head, which it does badly. The harness runs it instead, when the question writes
the call out with literals, names and calls only, and every name in it is either a builtin that
only builds values (``list``, ``range``...) or one the project defines: the script imports those
names from the modules that define them and prints the call's ``repr`` (an iterator's first
items), or the exception it raises. Nothing but what the user wrote is called, with one exception:
a method written on its class (``Version.next_version("prerelease")``) is shorthand for a call on
some instance, and when the question gives the values it means ("for 1.2.3, and for 1.2.3-rc.1")
each is made an instance by the class's own parser (``parse``, ``from_str``...) or constructor.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from nestor.runtime.features.small.gathering.project import project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader

MAX_CALLS = 4
MAX_NESTING = 4
_NAME_START = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\(")
_CALLED = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*)\s*\(")
"""Any name called in a call's text: the outermost, nested ones, and each of a chain's methods."""
_TEST_FILE = re.compile(r"(?:^|/)(?:tests?)/|(?:^|/)test_[^/]*$|_test\.py$|(?:^|/)conftest\.py$")
SAFE_BUILTINS = frozenset(
    {
        "abs", "bool", "bytes", "dict", "enumerate", "float", "frozenset", "int", "iter", "len", "list",
        "max", "min", "next", "range", "repr", "reversed", "set", "sorted", "str", "sum", "tuple",
        "type", "zip",
    }
)  # fmt: skip
"""Builtins a quoted call may use around the project's own names: they only build and read values."""
_ALLOWED_NODES = (
    ast.Call,
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.keyword,
    ast.UnaryOp,
    ast.BinOp,
    ast.Load,
    ast.operator,
    ast.unaryop,
)


@dataclass(frozen=True, slots=True)
class QuotedCall:
    """A call the user wrote.

    Attributes:
        expression: The call, as Python writes it.
        names: The names it uses that are not builtins, in order: the script imports each.
        unbound: ``(name, attribute)`` for each attribute called straight on a name
            (``Version.parse(...)``): a method called on its class is shorthand, not a call.

    """

    expression: str
    names: tuple[str, ...]
    unbound: tuple[tuple[str, str], ...] = ()

    @property
    def root(self) -> str:
        """The first name the call uses."""
        return self.names[0]


def call_texts(prompt: str) -> list[str]:
    """The text of each outermost call ``prompt`` writes out (``name(...)``, chained calls included)."""
    found: list[str] = []
    covered = -1
    for match in _NAME_START.finditer(prompt):
        if match.start() < covered:
            continue
        end = call_end(prompt, match.start())
        if end is not None:
            found.append(prompt[match.start() : end])
            covered = end
    return list(dict.fromkeys(found))[:MAX_CALLS]


def called_names(prompt: str) -> list[str]:
    """The names of the functions the calls ``prompt`` writes out call, nested calls included.

    ``list(sliding_window(2, xs))`` calls ``list`` and ``sliding_window``; ``v.next_version(...)``
    calls ``next_version`` (a dotted name's last part), and each method of a chain. In order, without
    repeats.
    """
    names = (match.group(1) for text in call_texts(prompt) for match in _CALLED.finditer(text))
    return list(dict.fromkeys(names))


_EXAMPLE = re.compile(
    r"\b(?:like|such\s+as|e\.g\.|for\s+example|for\s+instance|say)[:,]?\s+(`[^`\n]+`|'[^'\n]+'|\"[^\"\n]+\")"
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def example_calls(prompt: str, callables: set[str]) -> list[str]:
    """Calls a question implies with an example: "what does parse do with a value like `a=%E0`?".

    The function is the last name of ``callables`` the question writes before "like", "such as",
    "e.g." or "for example" and the example quoted after it; the example is passed as the
    question writes it (a number in backticks as a number, anything else as a string). The calls are then
    run only as :func:`quoted_calls` (and :mod:`.node_calls`) allow any call the user writes.
    """
    found: list[str] = []
    for example in _EXAMPLE.finditer(prompt):
        words = re.findall(r"(?<![\w.])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", prompt[: example.start()])
        named = [word for word in words if word in callables or word.rpartition(".")[2] in callables]
        quoted = example.group(1)
        text = quoted[1:-1]
        if not named or not text.strip() or _NAME_START.match(text):
            continue  # no function named before it, or the example is a call of its own
        number = quoted.startswith("`") and _NUMBER.fullmatch(text)
        argument = text if number else json.dumps(text)
        found.append(f"{named[-1]}({argument})")
    return list(dict.fromkeys(found))[:MAX_CALLS]


_VALUE = re.compile(
    r"`([^`\n]+)`|(?<![\w'\"])'([^'\n]+)'(?![\w'])|\"([^\"\n]+)\"|"
    r"(?<![\w.+-])(\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.+-]*[0-9A-Za-z])?)(?![\w])"
)
"""A value a question gives: quoted or in backticks, or a dotted number (``1.2.3-rc.1``, ``2.5``)."""


def example_values(prompt: str) -> list[str]:
    """The values ``prompt`` gives outside the calls it writes out, in order, at most :data:`MAX_CALLS`.

    "What do I get for 1.2.3, and for 1.2.3-rc.1?" gives ``1.2.3`` and ``1.2.3-rc.1``; a quoted
    call (```f(x)```) is not a value.
    """
    text = prompt
    for call in call_texts(prompt):
        text = text.replace(call, " ")
    found = (next(group for group in match.groups() if group is not None) for match in _VALUE.finditer(text))
    values = [value.strip() for value in found if value.strip() and not _NAME_START.search(value)]
    return list(dict.fromkeys(values))[:MAX_CALLS]


def quoted_calls(prompt: str) -> list[QuotedCall]:
    """The calls ``prompt`` writes out, at most :data:`MAX_CALLS`, outermost only.

    A call is taken when it is made only of literals, names, attributes and calls, and every name
    it calls is either one of :data:`SAFE_BUILTINS` or not a builtin at all (the harness then runs
    it only if the project defines that name): ``list(partition(3, range(8)))`` is, ``open(x)``
    and ``f(lambda: 1)`` are not.
    """
    found: dict[str, QuotedCall] = {}
    covered = -1
    for match in _NAME_START.finditer(prompt):
        if match.start() < covered:
            continue  # inside a call already taken
        end = call_end(prompt, match.start())
        if end is None:
            continue
        call = parsed_call(prompt[match.start() : end])
        if call is not None:
            found.setdefault(call.expression, call)
            covered = end
    return list(found.values())[:MAX_CALLS]


def call_end(text: str, start: int) -> int | None:
    """Where the call starting at ``start`` ends (its balanced brackets, then ``.name(...)`` chained)."""
    position = text.index("(", start)
    end: int | None = None
    while position < len(text) and text[position] == "(":
        depth = 0
        for index in range(position, len(text)):
            char = text[index]
            if char == "\n":
                return end
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
            if depth > MAX_NESTING:
                return end
            if depth == 0:
                end = index + 1
                break
        else:
            return end
        chained = re.compile(r"\.[A-Za-z_]\w*\(").match(text, end)
        if chained is None:
            return end
        position = chained.end() - 1
    return end


def parsed_call(code: str) -> QuotedCall | None:
    """``code`` as a call the harness may run (see :func:`quoted_calls`), or None."""
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return None
    if not isinstance(tree.body, ast.Call):
        return None
    names: dict[str, None] = {}
    unbound: list[tuple[str, str]] = []
    for node in ast.walk(tree.body):
        if not isinstance(node, _ALLOWED_NODES):
            return None
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name | ast.Attribute):
            return None
        if isinstance(node, ast.Name):
            if node.id in SAFE_BUILTINS:
                continue
            if hasattr(builtins, node.id):
                return None  # open(), exec(), __import__(): never
            names.setdefault(node.id, None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id not in SAFE_BUILTINS:
                unbound.append((owner.id, node.func.attr))
    if not names:
        return None
    return QuotedCall(ast.unparse(tree.body), tuple(names), tuple(unbound))


def import_statement(reader: ProjectReader, name: str) -> tuple[str, str] | None:
    """How to import ``name`` from the project: (directory to put on ``sys.path``, statement).

    ``name`` is a class or function the project defines at the top level of a module, else one of
    its modules or packages; None when it is neither (a builtin, a name from elsewhere).
    """
    definition = re.compile(rf"^(?:class|def|async\s+def)\s+{re.escape(name)}\b", re.MULTILINE)
    sources = [
        PurePosixPath(path)
        for path in project_files(reader.root)
        if path.endswith(".py") and not _TEST_FILE.search(path)
    ]
    modules = [(path, *_import_location(reader, path)) for path in sources]
    # A file name is not always a module name ("my-script.py"): those cannot be imported.
    modules = [
        (path, root, module)
        for path, root, module in modules
        if module and all(part.isidentifier() for part in module.split("."))
    ]
    # A function named like its module (toolz's ``diff``, ``chunks.chunks``) is what a call means.
    for path, root, module in modules:
        text = reader.read_text(str(path))
        if text is not None and definition.search(text):
            return root, f"from {module} import {name}"
    for _path, root, module in modules:
        if module.rpartition(".")[2] == name:
            parent = module.rpartition(".")[0]
            return root, f"from {parent} import {name}" if parent else f"import {name}"
    return None


def _import_location(reader: ProjectReader, path: PurePosixPath) -> tuple[str, str]:
    """The directory to put on ``sys.path`` and the dotted module, as pytest's rootdir rule has it."""
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while directory != PurePosixPath(".") and (reader.root / directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return str(directory), ".".join(parts)


UNBOUND_EXIT = 3
"""The script's exit status when the call is a method of a class called on the class itself."""
MAX_ITEMS = 20
"""Items of an iterator the call returns that the script prints."""


MAX_STRING_CHARS = 200
"""Of a result's string, when it differs from its ``repr``, the first characters printed."""
_PARSERS = ("parse", "from_str", "from_string", "fromstring", "from_text")
"""Class methods that make an instance from a value, tried in this order before the constructor."""
_SHOW = f"""
def _show(result):
    if hasattr(result, '__next__'):
        items = list(itertools.islice(result, {MAX_ITEMS + 1}))
        more = ', ...' if len(items) > {MAX_ITEMS} else ''
        print('an iterator of', repr(items[:{MAX_ITEMS}])[:-1] + more + ']')
        return
    shown = repr(result)
    print(shown)
    try:
        text = str(result)
    except Exception:
        return
    if not isinstance(result, (str, bytes, bytearray)) and text != shown:
        print('as a string:', text[:{MAX_STRING_CHARS}])
"""
"""Prints a result: an iterator by its first items, an object also as its ``str`` when that differs."""
_MADE = f"""
def _made(cls, value):
    makers = [(name, inspect.getattr_static(cls, name, None)) for name in {_PARSERS!r}]
    for name, maker in makers + [('', None)]:
        if name and not isinstance(maker, (classmethod, staticmethod)):
            continue
        try:
            return getattr(cls, name)(value) if name else cls(value), name
        except Exception:
            continue
    return None, ''
"""
"""Makes an instance of a class from a value, by its parser or else its constructor (None: neither did)."""


def call_script(call: QuotedCall, imports: list[tuple[str, str]], receivers: Sequence[str] = ()) -> str:
    """A Python script that imports the call's names and prints what the call returns or raises.

    Args:
        call: The call.
        imports: ``(directory for sys.path, import statement)`` for each of ``call.names``.
        receivers: The values the question gives (:func:`example_values`), for a method written
            on its class.

    ``Version.next_version("prerelease")`` is shorthand for a call on some version, not a call
    to make: its ``TypeError`` would mislead. With ``receivers`` the method is called on each of
    them made a ``Version`` (``Version.parse('1.2.3').next_version('prerelease')``, the line the
    script prints before its result); without, or when none can be made one, the script exits
    with :data:`UNBOUND_EXIT`. An iterator is shown by its first items (``partition(3, range(8))``
    is a generator), an object also as its string when that differs from its ``repr``.

    """
    lines = ["import inspect, itertools, sys"]
    for directory in dict.fromkeys(directory for directory, _ in imports):
        lines.append(f"sys.path.insert(0, {directory!r})")
    lines += [statement for _, statement in imports]
    lines += [*_SHOW.strip().splitlines(), *_MADE.strip().splitlines()]
    on_instances = _on_instance(call)
    for owner, member in call.unbound:
        lines += [
            f"_member = inspect.getattr_static({owner}, {member!r}, None)",
            f"if inspect.isclass({owner}) and inspect.isfunction(_member):",
        ]
        if on_instances is None or (owner, member) != on_instances[:2] or not receivers:
            lines.append(f"    sys.exit({UNBOUND_EXIT})")
            continue
        _, _, arguments = on_instances
        lines += [
            "    _ran = 0",
            f"    for _value in {list(receivers)!r}:",
            f"        _instance, _how = _made({owner}, _value)",
            "        if _instance is None:",
            "            continue",
            f"        _made_text = {owner!r} + ('.' + _how if _how else '') + '(' + repr(_value) + ')'",
            f"        print('>>>', _made_text + {f'.{member}({arguments})'!r})",
            "        _ran += 1",
            "        try:",
            f"            _show({owner}.{member}(_instance{', ' + arguments if arguments else ''}))",
            "        except Exception as error:",
            "            print('raises', type(error).__name__ + ':', error)",
            f"    sys.exit(0 if _ran else {UNBOUND_EXIT})",
        ]
    lines += [
        "try:",
        f"    _show({call.expression})",
        "except Exception as error:",
        "    print('raises', type(error).__name__ + ':', error)",
    ]
    return "\n".join(lines)


def _on_instance(call: QuotedCall) -> tuple[str, str, str] | None:
    """``(class, method, arguments)`` when the call is just ``Class.method(arguments)``, else None."""
    tree = ast.parse(call.expression, mode="eval").body
    if not (
        isinstance(tree, ast.Call)
        and isinstance(tree.func, ast.Attribute)
        and isinstance(tree.func.value, ast.Name)
    ):
        return None
    arguments = ", ".join([*map(ast.unparse, tree.args), *map(ast.unparse, tree.keywords)])
    return tree.func.value.id, tree.func.attr, arguments
