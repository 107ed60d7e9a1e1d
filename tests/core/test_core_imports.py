"""``core`` imports only the standard library, pydantic and ``pydantic_ai.messages``, as its contract says.

import-linter's forbidden contract names the packages ``core`` may not import; this test holds every
import of ``core`` (in functions and under ``TYPE_CHECKING`` too) to the short list it may.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nestor.core

CORE = Path(nestor.core.__file__).parent
ALLOWED = ("pydantic", "pydantic_ai.messages", "nestor.core")


def imported(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def allowed(module: str) -> bool:
    top = module.split(".")[0]
    return (
        top in sys.stdlib_module_names
        or top == "__future__"
        or any(module == name or module.startswith(name + ".") for name in ALLOWED)
    )


def test_core_imports_only_the_standard_library_pydantic_and_pydantic_ai_messages() -> None:
    wrong = {
        path.name: [module for module in imported(path) if not allowed(module)] for path in CORE.rglob("*.py")
    }
    assert not {name: modules for name, modules in wrong.items() if modules}


def test_the_rule_refuses_what_it_should() -> None:
    assert not allowed("pydantic_ai.models") and not allowed("nestor.store") and not allowed("httpx")
    assert allowed("pydantic.fields") and allowed("pydantic_ai.messages") and allowed("os.path")
