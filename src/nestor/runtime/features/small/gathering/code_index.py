"""Code intelligence for every language with a grammar: definitions, calls, tests, read with tree-sitter.

A small model asked "which functions call X" lists X itself and functions that do not call it; the
answer is in the code, one parse away. So nestor parses each source file of the project
(:mod:`.languages`: Python, JavaScript, TypeScript, Rust, Go) and keeps what such questions need:

- **definitions**: functions and methods (with the class, ``impl``, object or Go receiver type
  they belong to), classes, structs, enums with their variants, interfaces and traits, and
  top-level variables and constants, each with its lines;
- **calls**: each call's name (``f(x)``, ``obj.f(x)``, ``Type::f(x)``: ``f``) and the function
  it is made in;
- **tests**: Python's ``test_*`` functions, Rust's ``#[test]`` functions, Go's ``Test*``
  functions in ``_test.go`` files, and JavaScript's ``it(...)``/``test(...)`` blocks with their
  ``describe(...)`` titles, each with the names it calls and the words of its name.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from nestor.runtime.features.small.gathering.languages import language_of, parse
from nestor.runtime.features.small.gathering.project import is_test_path, project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader

if TYPE_CHECKING:
    import tree_sitter

MAX_FILES = 1500
"""Source files parsed at most: a huge repository's index would cost seconds for every prompt."""

DefinitionKind = Literal["function", "method", "class", "struct", "enum", "trait", "variable", "variant"]

_FUNCTIONS = frozenset(
    {
        "function_definition",  # Python
        "function_declaration",  # JavaScript, TypeScript
        "generator_function_declaration",
        "method_definition",
        "function_item",  # Rust
        "function_signature_item",
        "method_declaration",  # Go: its receiver's type is its owner
        "method_elem",  # Go: an interface's method
    }
)
_CLASSES: dict[str, DefinitionKind] = {
    "class_definition": "class",
    "class_declaration": "class",
    "class": "class",
    "abstract_class_declaration": "class",
    "interface_declaration": "class",
    "struct_item": "struct",
    "enum_item": "enum",
    "enum_declaration": "enum",
    "trait_item": "trait",
}
_GO_TYPES: dict[str, DefinitionKind] = {"struct_type": "struct", "interface_type": "trait"}
_CALLS = frozenset({"call", "call_expression", "new_expression"})
_GO_TEST_PREFIXES = ("Test", "Benchmark", "Fuzz", "Example")
_VARIABLES = frozenset(
    {"assignment", "variable_declarator", "const_item", "static_item", "var_spec", "const_spec"}
)
_JS_TEST_CALLS = frozenset({"it", "test"})
_JS_SUITE_CALLS = frozenset({"describe", "suite", "context"})


@dataclass(frozen=True, slots=True)
class Definition:
    """A name the code defines.

    Attributes:
        name: The name.
        path: The project-relative file.
        line: Its first line (1-based).
        end: Its last line.
        kind: What it is.
        owner: The class, ``impl``, enum or object it belongs to, if any.

    """

    name: str
    path: str
    line: int
    end: int
    kind: DefinitionKind
    owner: str | None = None

    @property
    def qualified(self) -> str:
        """``Owner.name``, or the name alone."""
        return f"{self.owner}.{self.name}" if self.owner else self.name


@dataclass(frozen=True, slots=True)
class Call:
    """A call of ``name`` at ``path:line``, made in ``caller`` (None: at the top of a file)."""

    name: str
    path: str
    line: int
    caller: Definition | None


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test: its title (``describe`` titles first, for JavaScript), where it is, what it calls.

    Attributes:
        title: The test function's name, or the ``describe › it`` titles.
        path: The file.
        line: Its first line.
        end: Its last line.
        calls: The names it calls.
        names: Every identifier in it (``maxAge`` in ``{ maxAge: 5 }``).

    """

    title: str
    path: str
    line: int
    end: int
    calls: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()


@dataclass(slots=True)
class CodeIndex:
    """The definitions, calls and tests of a project's source files."""

    definitions: list[Definition] = field(default_factory=list[Definition])
    calls: list[Call] = field(default_factory=list[Call])
    tests: list[TestCase] = field(default_factory=list[TestCase])

    def defined(self, name: str) -> list[Definition]:
        """The definitions of ``name``, in file order."""
        return [definition for definition in self.definitions if definition.name == name]

    def calls_of(self, name: str) -> list[Call]:
        """The calls of ``name``, in file order."""
        return [call for call in self.calls if call.name == name]

    def members(self, owner: str) -> list[Definition]:
        """What belongs to ``owner`` (a class's methods, an enum's variants), in file order."""
        return [definition for definition in self.definitions if definition.owner == owner]

    def functions_named(self, name: str, owner: str | None = None) -> list[Definition]:
        """The functions and methods called ``name`` outside the tests (of ``owner``: :func:`owned_by`)."""
        found = [
            definition
            for definition in self.defined(name)
            if definition.kind in ("function", "method") and not is_test_path(definition.path)
        ]
        return owned_by(found, owner)

    def test_file_calling(self, name: str, owner: str | None = None) -> str | None:
        """The test file whose tests call ``name`` most (the first of a tie); None when none does.

        For a method, a test that calls it and uses its class (``Counter``) counts most: another
        class's ``add`` is not it.
        """
        counts: dict[str, int] = {}
        for test in self.tests:
            if name in test.calls:
                weight = 3 if owner is not None and owner in test.names else 1
                counts[test.path] = counts.get(test.path, 0) + weight
        return max(counts, key=lambda path: counts[path]) if counts else None

    def enclosing(self, path: str, line: int) -> Definition | None:
        """The innermost function or method of ``path`` around ``line``."""
        around = [
            definition
            for definition in self.definitions
            if definition.path == path
            and definition.kind in ("function", "method")
            and definition.line <= line <= definition.end
        ]
        return max(around, key=lambda definition: definition.line, default=None)


def code_index(reader: ProjectReader, paths: Iterable[str] | None = None) -> CodeIndex:
    """Index the project's source files (at most :data:`MAX_FILES`) as they are now."""
    index = CodeIndex()
    chosen = [path for path in (paths or project_files(reader.root)) if language_of(path)][:MAX_FILES]
    for path in chosen:
        source = reader.read_text(path)
        if source is None:
            continue
        tree = parse(path, source)
        if tree is not None:
            _File(path, index, is_test_path(path)).walk(tree.root_node, None, None, ())
    return index


@dataclass(slots=True)
class _File:
    """Walks one file's syntax tree into the index."""

    path: str
    index: CodeIndex
    test_file: bool

    def walk(
        self,
        node: tree_sitter.Node,
        function: Definition | None,
        owner: str | None,
        suites: tuple[str, ...],
    ) -> None:
        kind = node.type
        if kind in _FUNCTIONS or _is_function_value(node):
            if kind == "method_declaration":
                owner = _receiver_type(node) or owner
            definition = self._function(node, owner)
            if definition is not None:
                self.index.definitions.append(definition)
                if self._is_test(node, definition):
                    self.index.tests.append(self._test(definition.name, node, definition))
                function = definition
        elif kind in _CLASSES:
            name = _name(node)
            if name is not None:
                self.index.definitions.append(self._definition(name, node, _CLASSES[kind], owner))
                owner = name
        elif kind == "type_spec":  # Go: `type Version struct {...}`, `type Op int`
            name = _name(node)
            if name is not None:
                shape = node.child_by_field_name("type")
                self.index.definitions.append(
                    self._definition(name, node, _GO_TYPES.get(shape.type if shape else "", "class"), owner)
                )
                owner = name
        elif kind == "impl_item":
            owner = _text(node.child_by_field_name("type")) or owner
        elif kind in ("enum_variant", "enum_member_declaration") and owner is not None:
            if (name := _name(node)) is not None:
                self.index.definitions.append(self._definition(name, node, "variant", owner))
        elif kind in _VARIABLES and function is None:
            self._variable(node, owner)
        if kind == "token_tree":  # a Rust macro's arguments: `assert!(helper(2))` calls helper
            for name, line in _calls_in_tokens(node):
                self.index.calls.append(Call(name, self.path, line, function))
        if kind in _CALLS:
            name = _callee(node)
            if name is not None:
                self.index.calls.append(Call(name, self.path, node.start_point[0] + 1, function))
                if self.test_file and name in (_JS_TEST_CALLS | _JS_SUITE_CALLS):
                    title = _first_string(node)
                    if title is not None and name in _JS_SUITE_CALLS:
                        suites = (*suites, title)
                    elif title is not None:
                        self.index.tests.append(self._test(" › ".join((*suites, title)), node, None))
        for child in node.children:
            self.walk(child, function, owner, suites)

    def _function(self, node: tree_sitter.Node, owner: str | None) -> Definition | None:
        name = _name(node)
        if name is None and node.parent is not None and node.parent.type in ("variable_declarator", "pair"):
            name = _name(node.parent)
        if name is None:
            return None
        return self._definition(name, node, "method" if owner else "function", owner)

    def _definition(
        self, name: str, node: tree_sitter.Node, kind: DefinitionKind, owner: str | None
    ) -> Definition:
        start = node.start_point[0] + 1
        return Definition(name, self.path, start, node.end_point[0] + 1, kind, owner)

    def _variable(self, node: tree_sitter.Node, owner: str | None) -> None:
        target = node.child_by_field_name("left") or node.child_by_field_name("name")
        value = node.child_by_field_name("right") or node.child_by_field_name("value")
        if target is None or target.type not in ("identifier", "type_identifier"):
            return
        if value is not None and _is_function_value(value):
            return  # defined as a function where the value is walked
        name = _text(target)
        if name:
            self.index.definitions.append(self._definition(name, node, "variable", owner))

    def _is_test(self, node: tree_sitter.Node, definition: Definition) -> bool:
        language = language_of(self.path)
        if language == "rust":
            return any("test" in _text(sibling) for sibling in _attributes(node))
        if language == "go":
            return self.path.endswith("_test.go") and definition.name.startswith(_GO_TEST_PREFIXES)
        return self.test_file and definition.name.startswith("test")

    def _test(self, title: str, node: tree_sitter.Node, definition: Definition | None) -> TestCase:
        calls: set[str] = set()
        names: set[str] = set()
        for child in _descendants(node):
            if child.type in _CALLS and (callee := _callee(child)) is not None:
                calls.add(callee)
            elif child.type == "token_tree":
                calls.update(name for name, _ in _calls_in_tokens(child))
            elif child.type.endswith("identifier"):
                names.add(_text(child))
        line = definition.line if definition else node.start_point[0] + 1
        return TestCase(title, self.path, line, node.end_point[0] + 1, frozenset(calls), frozenset(names))


class _Owned(Protocol):
    @property
    def owner(self) -> str | None: ...


_OwnedT = TypeVar("_OwnedT", bound=_Owned)


def owned_by(found: list[_OwnedT], owner: str | None) -> list[_OwnedT]:
    """Of the definitions of a name, those the user meant by writing it with ``owner``.

    ``Store.get``: the ones of ``Store``; when none is (``semver.parse``, a module's function),
    the ones of no class. Without an owner, all of them.
    """
    if owner is None:
        return found
    return [item for item in found if item.owner == owner] or [item for item in found if item.owner is None]


def words_of(name: str) -> list[str]:
    """The lowercase words of an identifier or title: ``thousandsSeparator`` -> thousands, separator."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[_\W]+", " ", name)
    return [word.lower() for word in spaced.split() if word]


def _is_function_value(node: tree_sitter.Node) -> bool:
    return node.type in ("arrow_function", "function_expression", "function") and (
        node.parent is not None
        and node.parent.type in ("variable_declarator", "pair", "assignment_expression")
    )


def _name(node: tree_sitter.Node) -> str | None:
    named = node.child_by_field_name("name") or node.child_by_field_name("key")
    if named is None and node.type == "assignment_expression":
        named = node.child_by_field_name("left")
    if named is None:
        return None
    if named.type == "member_expression":
        named = named.child_by_field_name("property") or named
    text = _text(named).strip("'\"")
    return text if re.fullmatch(r"[A-Za-z_$][\w$]*", text) else None


def _receiver_type(node: tree_sitter.Node) -> str | None:
    """A Go method's receiver type: ``Version`` for ``func (v *Version) Compare(...)``."""
    receiver = node.child_by_field_name("receiver")
    for parameter in receiver.named_children if receiver is not None else []:
        shape = parameter.child_by_field_name("type")
        while shape is not None and shape.type in ("pointer_type", "generic_type"):
            shape = shape.named_children[0] if shape.named_children else None
        if shape is not None and shape.type == "type_identifier":
            return _text(shape)
    return None


def _callee(node: tree_sitter.Node) -> str | None:
    function = node.child_by_field_name("function") or node.child_by_field_name("constructor")
    while function is not None:
        if function.type in ("identifier", "field_identifier", "property_identifier"):
            return _text(function)
        nested = (
            function.child_by_field_name("attribute")  # Python obj.f
            or function.child_by_field_name("property")  # JavaScript obj.f
            or function.child_by_field_name("field")  # Rust obj.f
            or function.child_by_field_name("name")  # Rust Type::f
        )
        if nested is None:
            return None
        function = nested
    return None


def _calls_in_tokens(node: tree_sitter.Node) -> Iterator[tuple[str, int]]:
    """``name(`` in a macro's token tree, which tree-sitter leaves unparsed: each name and line."""
    for current, following in itertools.pairwise(node.children):
        called = following.type == "token_tree" and _text(following).startswith("(")
        if current.type == "identifier" and called:
            yield _text(current), current.start_point[0] + 1


def _first_string(node: tree_sitter.Node) -> str | None:
    arguments = node.child_by_field_name("arguments")
    for child in arguments.named_children if arguments is not None else []:
        if child.type in ("string", "template_string"):
            return _text(child)[1:-1]
        return None
    return None


def _attributes(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type in ("attribute_item", "line_comment", "block_comment"):
        if sibling.type == "attribute_item":
            yield sibling
        sibling = sibling.prev_named_sibling


def _descendants(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = list(node.children)
    while stack:
        child = stack.pop()
        yield child
        stack.extend(child.children)


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""
