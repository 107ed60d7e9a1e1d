"""The map of the code (``docs/architecture.md``) stays true: what it names exists where it says.

Every backticked path must exist; a bare file name in a row of the rooms table (or in the
small-model harness's section) inside that row's package. A backticked class, ``Class.member``
or function placed beside a path (```path` `Name``` or ```path` (`Name``` or ```Name` (`path```)
must be defined in that file; any other class name or ``Class.member`` somewhere in ``src/``.
Every package has a row of its own or is named in its parent's row, and every module is named.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nestor

SOURCE = Path(nestor.__file__).parent
ROOT = SOURCE.parent.parent
MAP = ROOT / "docs" / "architecture.md"

# Names the map mentions that other libraries define (pydantic-ai's messages and models).
EXTERNAL = {"BinaryContent", "UserPromptPart", "FunctionModel", "Model", "ModelSettings"}

TOKEN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w.*-]+(/[\w.*-]*)*$")
SYMBOL = re.compile(r"^([A-Za-z_]\w*)(\.[A-Za-z_]\w*)*(\(.*\))?$")


@dataclass
class Token:
    text: str
    start: int
    end: int
    context: str | None  # the package a bare file name lives in, relative to src/nestor


@dataclass
class Definitions:
    modules: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    classes: dict[str, set[str]] = field(default_factory=dict[str, set[str]])


@cache
def definitions() -> Definitions:
    found = Definitions()
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = found.modules.setdefault(path.relative_to(SOURCE).as_posix(), set())
        for node in tree.body:
            names.update(_bound(node))
            if isinstance(node, ast.ClassDef):
                members = found.classes.setdefault(node.name, set())
                for item in ast.walk(node):
                    members.update(_bound(item))
                    if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store):
                        members.add(item.attr)
    return found


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def is_path(text: str) -> bool:
    """A file (``.py``, ``.md``) or a folder (``name/``), not a URL path nor an ACP method."""
    stem = text.rstrip("/").split("/")[-1]
    named = text.endswith("/") or stem.endswith((".py", ".md"))
    return bool(PATH.match(text)) and named and text[:1] not in ".~" and stem[:1] != "."


def is_symbol(text: str) -> bool:
    match = SYMBOL.match(text)
    if match is None:
        return False
    head = match.group(1)
    return bool(re.match(r"^_?[A-Z][a-z0-9]+[A-Za-z0-9]*$", head)) and (head != text or head[0].isupper())


def tokens() -> list[Token]:
    text = MAP.read_text(encoding="utf-8")
    found: list[Token] = []
    small = text.index("## The small-model harness")
    small_end = text.index("\n## ", small + 1)
    for line_start, line in _lines(text):
        context = None
        if line.startswith("| `") and not line.startswith("| package"):
            first = TOKEN.search(line)
            context = first.group(1).rstrip("/") if first and first.group(1).endswith("/") else None
        elif small <= line_start < small_end:
            context = "runtime/features/small"
            bullet = re.match(r"- `(\w+)/`", line)
            if bullet:
                context += "/" + bullet.group(1)
        for match in TOKEN.finditer(line):
            found.append(Token(match.group(1), line_start + match.start(), line_start + match.end(), context))
    return found


def _lines(text: str) -> list[tuple[int, str]]:
    """The map's lines, a wrapped bullet of the small-model section joined to its first line."""
    result: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):
        if result and line.startswith("  ") and result[-1][1].startswith("- `"):
            start, joined = result[-1]
            result[-1] = (start, joined + "\n" + line)
        else:
            result.append((offset, line))
        offset += len(line) + 1
    return result


def resolve(path: str, context: str | None) -> list[Path]:
    """What ``path`` names: in its row's package, src/nestor, the repository, or a package below them."""
    name = path.rstrip("/")
    bases = [SOURCE / context] if context else []
    bases += [SOURCE, ROOT]
    for base in bases:
        matches = [match for match in base.glob(name) if match.exists()]
        if matches:
            return matches
    # A bare name in its row's package or below it (`tools/`'s `connection.py`, in `mcp/`), a
    # path relative to a package (runtime/'s `features/compaction.py`), a bench's file.
    for base in ([SOURCE / context] if context else []) + [SOURCE, ROOT / "bench"]:
        matches = [match for match in base.rglob(name.split("/")[-1]) if match.as_posix().endswith(name)]
        if matches:
            return matches
    return []


def defined_in(symbol: str, module: Path) -> bool:
    parts = symbol.split("(")[0].split(".")
    names = definitions().modules.get(module.relative_to(SOURCE).as_posix(), set())
    if parts[0] not in names:
        return False
    return len(parts) == 1 or parts[1] in definitions().classes.get(parts[0], set())


def defined_anywhere(symbol: str) -> bool:
    parts = symbol.split("(")[0].split(".")
    if parts[0] in EXTERNAL:
        return True
    if len(parts) == 1:
        return any(parts[0] in names for names in definitions().modules.values()) or parts[0] in (
            definitions().classes
        )
    return parts[1] in definitions().classes.get(parts[0], set())


def test_every_path_the_map_names_exists() -> None:
    missing = [
        (token.text, token.context)
        for token in tokens()
        if is_path(token.text) and not resolve(token.text, token.context)
    ]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_symbol_the_map_names_is_defined_where_it_says() -> None:
    text = MAP.read_text(encoding="utf-8")
    found = tokens()
    wrong: list[str] = []
    for index, token in enumerate(found):
        if not SYMBOL.match(token.text) or is_path(token.text):
            continue
        before = found[index - 1] if index else None
        after = found[index + 1] if index + 1 < len(found) else None
        beside: Token | None = None
        if before and is_path(before.text) and text[before.end : token.start] in (" ", "\n", " (", "\n("):
            beside = before
        elif after and is_path(after.text) and text[token.end : after.start] in (" (", "\n("):
            beside = after
        found_at = resolve(beside.text, beside.context) if beside else []
        modules = [m for m in found_at if m.suffix == ".py" and m.is_relative_to(SOURCE)]
        if modules and (is_symbol(token.text) or "_" in token.text.strip("_")):
            if not any(defined_in(token.text, module) for module in modules) and token.text not in EXTERNAL:
                wrong.append(f"{token.text} (said to be in {beside.text if beside else ''})")
        elif is_symbol(token.text) and not defined_anywhere(token.text):
            wrong.append(token.text)
    assert not wrong, f"docs/architecture.md names what src/ does not define there: {wrong}"


def test_every_package_has_a_row_and_every_module_is_named() -> None:
    text = MAP.read_text(encoding="utf-8")
    rows = {
        match.group(1).rstrip("/") for match in re.finditer(r"^\| `([\w/]+)` \|", text, flags=re.MULTILINE)
    }
    packages = sorted(init.parent.relative_to(SOURCE).as_posix() for init in SOURCE.rglob("__init__.py"))
    resolved = [resolve(token.text, token.context) for token in tokens() if is_path(token.text)]
    named = {
        path.relative_to(SOURCE).as_posix()
        for paths in resolved
        for path in paths
        if path.is_relative_to(SOURCE)
    }
    unplaced = []
    for package in packages:
        if package == "." or package in rows:
            continue
        children = [other for other in packages if other.startswith(package + "/")]
        if children and all(
            child in rows for child in children if child.count("/") == package.count("/") + 1
        ):
            continue  # runtime/: each of its layers has a row
        if package not in named:
            unplaced.append(package)
    assert not unplaced, (
        f"packages with no row in docs/architecture.md, nor named in their parent's: {unplaced}"
    )
    modules = [
        path.relative_to(SOURCE).as_posix() for path in SOURCE.rglob("*.py") if path.name != "__init__.py"
    ]
    unnamed = [module for module in modules if module not in named]
    assert not unnamed, f"modules docs/architecture.md does not name: {sorted(unnamed)}"
