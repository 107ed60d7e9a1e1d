"""The calls a question quotes, run: what ``f(x)`` returns is best answered by calling it.

"What does ``Version.parse("1.0.0-rc.1").compare("1.0.0")`` return?" asks a small model to run
the code in its head, which it does badly. The harness runs it instead, when the question writes
the call out with literal arguments only and the first name in it is defined in the project:
the script imports that name from the module that defines it and prints the call's ``repr``, or
the exception it raises. Nothing but what the user wrote is called.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from nestor.runtime.small.project import project_files
from nestor.runtime.small.reader import ProjectReader

MAX_CALLS = 2
_CALL = re.compile(
    r"[A-Za-z_][\w.]*\((?:[^()\n]|\([^()\n]*\))*\)(?:\.[A-Za-z_]\w*\((?:[^()\n]|\([^()\n]*\))*\))*"
)
_TEST_FILE = re.compile(r"(?:^|/)(?:tests?)/|(?:^|/)test_[^/]*$|_test\.py$|(?:^|/)conftest\.py$")


@dataclass(frozen=True, slots=True)
class QuotedCall:
    """A call the user wrote.

    Attributes:
        expression: The call, as Python writes it.
        root: Its first name, which the script imports.
        member: The attribute of ``root`` called first (``parse`` in ``Version.parse(...)``).

    """

    expression: str
    root: str
    member: str | None = None


def quoted_calls(prompt: str) -> list[QuotedCall]:
    """The calls ``prompt`` writes out with literal arguments only, at most :data:`MAX_CALLS`."""
    found: dict[str, QuotedCall] = {}
    for match in _CALL.finditer(prompt):
        call = _literal_call(match.group(0))
        if call is not None:
            found.setdefault(call.expression, call)
    return list(found.values())[:MAX_CALLS]


def _literal_call(code: str) -> QuotedCall | None:
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return None
    if not isinstance(tree.body, ast.Call):
        return None
    root: str | None = None
    member: str | None = None
    for node in ast.walk(tree.body):  # outermost call first: the last one seen is the innermost
        if isinstance(node, ast.Call):
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            if not all(_is_literal(argument) for argument in arguments):
                return None
            function = node.func
            member = function.attr if isinstance(function, ast.Attribute) else None
            target = function
            while isinstance(target, ast.Attribute | ast.Call):
                target = target.value if isinstance(target, ast.Attribute) else target.func
            root = target.id if isinstance(target, ast.Name) else None
    if root is None:
        return None
    return QuotedCall(ast.unparse(tree.body), root, member)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def import_statement(reader: ProjectReader, name: str) -> tuple[str, str] | None:
    """How to import ``name`` from the project: (directory to put on ``sys.path``, statement).

    ``name`` is a class or function the project defines at the top level of a module, or one of
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
    for _path, root, module in modules:
        if module.rpartition(".")[2] == name:
            parent = module.rpartition(".")[0]
            return root, f"from {parent} import {name}" if parent else f"import {name}"
    for path, root, module in modules:
        text = reader.read_text(str(path))
        if text is not None and definition.search(text):
            return root, f"from {module} import {name}"
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


def call_script(call: QuotedCall, root: str, statement: str) -> str:
    """A Python script that imports ``call.root`` and prints what the call returns or raises.

    ``Version.next_version("prerelease")`` is shorthand for a call on some version, not a call
    to make: its ``TypeError`` would mislead, so the script exits with :data:`UNBOUND_EXIT`.
    """
    lines = ["import inspect, sys", f"sys.path.insert(0, {root!r})", statement]
    if call.member is not None:
        lines += [
            f"_member = inspect.getattr_static({call.root}, {call.member!r}, None)",
            f"if inspect.isclass({call.root}) and inspect.isfunction(_member):",
            f"    sys.exit({UNBOUND_EXIT})",
        ]
    lines += [
        "try:",
        f"    print(repr({call.expression}))",
        "except Exception as error:",
        "    print('raises', type(error).__name__ + ':', error)",
    ]
    return "\n".join(lines)
