"""A scenario the question tells in prose, run: "with ``c = LRUCache(2)``, I set c['a'] = 1, read c['a']...".

What an object holds after a few operations is a question of order and state, which a small model
gets wrong when it runs them in its head. When the question binds a name to a call it writes out
(as :mod:`.calls` accepts them) and then says what it does with that name, step by step, the
harness runs exactly those steps and prints what each read gave and what the object holds at the
end. A step is taken only when it is one of: an item or attribute set to a literal
(``c['a'] = 1``), an item or attribute read (``c['a']``), or a method called with literals
(``c.pop('a')``); prose is left out, and a step of any other form (``c.push(f(x))``) makes the
harness run nothing: a run without it would not be the user's scenario.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from nestor.runtime.features.small.gathering.calls import QuotedCall, call_end, parsed_call

MAX_STEPS = 12
_BINDING = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*=\s*(?=[A-Za-z_][\w.]*\()")
_LITERAL_VALUE = re.compile(
    r"""\s*=\s*(?:-?\d+(?:\.\d+)?|"[^"\n]*"|'[^'\n]*'|True|False|None|\[[^\]\n]*\]|\([^)\n]*\)|\{[^}\n]*\})"""
)


_ASSIGNED = re.compile(r"\s*=(?!=)")


@dataclass(frozen=True, slots=True)
class Scenario:
    """A name bound to a call, and the steps the question takes with it, in order.

    Attributes:
        name: The name (``c``).
        setup: The call it is bound to.
        steps: The steps, as Python statements or expressions.

    """

    name: str
    setup: QuotedCall
    steps: tuple[str, ...]

    @property
    def label(self) -> str:
        """The scenario as one line of code."""
        return "; ".join([f"{self.name} = {self.setup.expression}", *self.steps])


def scenario(prompt: str) -> Scenario | None:
    """The scenario ``prompt`` tells, or None when it binds no name to a call or takes no step."""
    for binding in _BINDING.finditer(prompt):
        end = call_end(prompt, binding.end())
        setup = parsed_call(prompt[binding.end() : end]) if end is not None else None
        if setup is None or end is None:
            continue
        name = binding.group(1)
        steps = _steps(prompt[end:], name)
        if steps:
            return Scenario(name, setup, tuple(steps[:MAX_STEPS]))
    return None


def _steps(text: str, name: str) -> list[str]:
    """The steps ``text`` takes with ``name``, in order (see the module's docstring)."""
    found: list[str] = []
    for start in re.finditer(rf"(?<![\w.]){re.escape(name)}(?=[\[.])", text):
        end = _access_end(text, start.end())
        if end is None:
            continue
        value = _LITERAL_VALUE.match(text, end)
        if value is None and _ASSIGNED.match(text, end):
            return []  # set to something not a literal: never taken as a read
        step = text[start.start() : value.end() if value else end].strip()
        if not _is_step(step, name):
            return []  # a step it cannot take: a run without it would not be the user's scenario
        found.append(step)
    return found


def _access_end(text: str, position: int) -> int | None:
    """Where ``[...]``, ``.attr`` and ``(...)`` after a name end, brackets balanced on one line."""
    end = None
    while position < len(text):
        char = text[position]
        if char == ".":
            attribute = re.compile(r"\.[A-Za-z_]\w*").match(text, position)
            if attribute is None:
                return end
            position = end = attribute.end()
        elif char in "[(":
            closing = {"[": "]", "(": ")"}[char]
            depth = 0
            for index in range(position, len(text)):
                if text[index] == "\n":
                    return end
                depth += (text[index] == char) - (text[index] == closing)
                if depth == 0:
                    position = end = index + 1
                    break
            else:
                return end
        else:
            return end
    return end


def _is_step(code: str, name: str) -> bool:
    """Whether ``code`` is a step the module takes: on ``name`` only, with literals only."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    if len(tree.body) != 1:
        return False
    statement = tree.body[0]
    if isinstance(statement, ast.Assign):
        return (
            len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Subscript | ast.Attribute)
            and _on_name(statement.targets[0], name)
            and _literal(statement.value)
        )
    if not isinstance(statement, ast.Expr):
        return False
    value = statement.value
    if isinstance(value, ast.Call):
        return (
            isinstance(value.func, ast.Attribute)
            and _on_name(value.func, name)
            and all(_literal(argument) for argument in [*value.args, *(k.value for k in value.keywords)])
        )
    return isinstance(value, ast.Subscript | ast.Attribute) and _on_name(value, name)


def _on_name(node: ast.expr, name: str) -> bool:
    """Whether ``node`` is ``name[literal]`` or ``name.attribute`` (one level, nothing else)."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id == name and _literal(node.slice)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == name
    return False


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def scenario_script(found: Scenario, imports: list[tuple[str, str]]) -> str:
    """A Python script that runs the scenario and prints each read, then the object at the end.

    Args:
        found: The scenario.
        imports: ``(directory for sys.path, import statement)`` for each name its setup uses.

    """
    lines = ["import sys"]
    for directory in dict.fromkeys(directory for directory, _ in imports):
        lines.append(f"sys.path.insert(0, {directory!r})")
    lines += [statement for _, statement in imports]
    lines += ["try:", f"    {found.name} = {found.setup.expression}"]
    for step in found.steps:
        if isinstance(ast.parse(step).body[0], ast.Assign):
            lines.append(f"    {step}")
        else:
            lines.append(f"    print({step!r}, '->', repr({step}))")
    lines += [
        f"    print({found.name!r}, 'is now', repr({found.name}))",
        f"    if hasattr({found.name}, '__iter__') and hasattr({found.name}, '__len__'):",
        f"        print('its items in order:', repr(list({found.name})))",
        "except Exception as error:",
        "    print('raises', type(error).__name__ + ':', error)",
    ]
    return "\n".join(lines)
