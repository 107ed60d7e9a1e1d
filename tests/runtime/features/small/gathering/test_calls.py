"""Running the calls a question writes out: which calls, imported from where, and what is printed."""

import subprocess
import sys
from pathlib import Path

from nestor.runtime.features.small.gathering.calls import (
    UNBOUND_EXIT,
    call_script,
    called_names,
    example_calls,
    example_values,
    import_statement,
    quoted_calls,
)
from nestor.runtime.features.small.gathering.reader import ProjectReader

VERSION = """class Version:
    def __init__(self, text):
        self.text = text

    @classmethod
    def parse(cls, text):
        if text.count(".") != 2:
            raise ValueError(f"{text} is not a version")
        return cls(text)

    def bump(self):
        return Version(self.text + ".1")

    def __str__(self):
        return self.text
"""


def _project(root: Path) -> ProjectReader:
    package = root / "src" / "vers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from vers.version import Version\n")
    (package / "version.py").write_text(VERSION)
    (root / "tests").mkdir()
    (root / "tests" / "test_version.py").write_text("def Version():\n    pass\n")
    return ProjectReader(root)


def _run(reader: ProjectReader, question: str, *, values: bool = False) -> subprocess.CompletedProcess[str]:
    [call] = quoted_calls(question)
    imports = [import_statement(reader, name) for name in call.names]
    assert all(imports)
    receivers = example_values(question) if values else ()
    return subprocess.run(
        [sys.executable, "-c", call_script(call, [found for found in imports if found], receivers)],
        cwd=reader.root,
        capture_output=True,
        text=True,
        check=False,
    )


def test_calls_of_literals_names_and_value_building_builtins_are_taken() -> None:
    calls = quoted_calls(
        'Does parse(text) differ from Version.parse("1.2.3").bump()? And len("ab")? '
        "What do list(partition(3, range(8))) and update_in({}, ['z'], str, None) return?"
    )
    assert [(call.expression, call.names, call.unbound) for call in calls] == [
        ("parse(text)", ("parse", "text"), ()),
        ("Version.parse('1.2.3').bump()", ("Version",), (("Version", "parse"),)),
        ("list(partition(3, range(8)))", ("partition",), ()),
        ("update_in({}, ['z'], str, None)", ("update_in",), ()),
    ]
    assert quoted_calls("What does the parser (the one in cli.py) do?") == []
    # Builtins that do more than build values, and code that is not a call, are never run.
    assert quoted_calls("What does open('x').read() or exec('1') or f(lambda: 1) or len('ab') do?") == []


def test_a_name_is_imported_from_the_module_defining_it_not_from_the_tests(tmp_path: Path) -> None:
    reader = _project(tmp_path)
    assert import_statement(reader, "Version") == ("src", "from vers.version import Version")
    assert import_statement(reader, "vers") == ("src", "import vers")
    assert import_statement(reader, "len") is None
    # Only importable module names: a file called so is not a way to write code into the script.
    (tmp_path / "tool;print(1).py").write_text("def Tool():\n    pass\n")
    assert import_statement(reader, "Tool") is None


def test_the_script_prints_what_the_call_returns_or_raises(tmp_path: Path) -> None:
    reader = _project(tmp_path)
    assert _run(reader, 'What does Version.parse("1.2.3").bump() give?').stdout.startswith(
        "<vers.version.Version object"
    )
    raised = _run(reader, 'What does Version.parse("1.2") do?')
    assert raised.stdout.strip() == "raises ValueError: 1.2 is not a version"


def test_an_iterator_is_shown_by_its_items_and_builtins_wrap_the_projects_names(tmp_path: Path) -> None:
    reader = _project(tmp_path)
    (tmp_path / "src" / "vers" / "chunks.py").write_text(
        "def chunks(n, seq):\n"
        "    seq = list(seq)\n"
        "    return (tuple(seq[i:i + n]) for i in range(0, len(seq), n))\n"
    )
    assert _run(reader, "What is chunks(3, range(8))?").stdout.strip() == (
        "an iterator of [(0, 1, 2), (3, 4, 5), (6, 7)]"
    )
    assert _run(reader, "What is list(chunks(2, 'abc'))?").stdout.strip() == "[('a', 'b'), ('c',)]"


def test_a_method_called_on_its_class_is_not_run(tmp_path: Path) -> None:
    reader = _project(tmp_path)
    assert _run(reader, "What does Version.bump() do?").returncode == UNBOUND_EXIT
    # Nor on values when the question gives none.
    assert _run(reader, "What does Version.bump() do?", values=True).returncode == UNBOUND_EXIT


def test_the_values_a_question_gives_are_the_quoted_ones_and_dotted_numbers_outside_its_calls() -> None:
    question = 'Explain Version.next_version("prerelease"). What do I get for 1.2.3, and for 1.2.3-rc.1?'
    assert example_values(question) == ["1.2.3", "1.2.3-rc.1"]
    assert example_values("Is `^0.2.3` met by '0.3.0' or \"0.2.9+build\"? Python 3.11, 2 cores.") == [
        "^0.2.3",
        "0.3.0",
        "0.2.9+build",
        "3.11",
    ]
    assert example_values("Why does `f(x)` fail? it's 3 o'clock") == []


def test_a_method_written_on_its_class_is_run_on_each_value_the_question_gives(tmp_path: Path) -> None:
    # "What does Version.next_version('prerelease') give for 1.2.3?" was answered from the code
    # read alone, and wrongly; the call on its class only exited.
    reader = _project(tmp_path)
    ran = _run(reader, "What does Version.bump() give for 1.2.3 and for `1.2`?", values=True)
    assert ran.returncode == 0
    lines = ran.stdout.splitlines()
    # Each value made a Version by the class's parser, else (1.2 is no version to it) by its constructor.
    assert lines[0] == ">>> Version.parse('1.2.3').bump()"
    assert lines[1].startswith("<vers.version.Version object")
    assert lines[2] == "as a string: 1.2.3.1"  # what a user reads, beside the repr
    assert lines[3] == ">>> Version('1.2').bump()"
    assert lines[4].startswith("<vers.version.Version object") and lines[5] == "as a string: 1.2.1"


def test_a_question_with_an_example_implies_the_call_it_asks_about() -> None:
    broken = "What does parse do with a cookie value whose percent-encoding is broken, like `a=%E0%A4%A`?"
    no_unit = "What does bytes.parse do with a string that has no unit, like '1024'?"

    assert example_calls(broken, {"parse", "serialize"}) == ['parse("a=%E0%A4%A")']
    assert example_calls(no_unit, {"parse"}) == ['bytes.parse("1024")']
    assert example_calls("What does format give for a number like `1536`?", {"format"}) == ["format(1536)"]
    # No function named before the example, or an example that is a call itself: nothing implied.
    assert example_calls("What is a cookie like `a=b`?", {"parse"}) == []
    assert example_calls("What does parse do with input like `os.system('id')`?", {"parse"}) == []


def test_the_names_a_questions_calls_call_include_nested_and_dotted_ones() -> None:
    # The function a question runs is often inside a builtin: list(sliding_window(...)).
    prompt = "What does list(sliding_window(2, [1, 2, 3])) give, and Version.parse('1.2.3').bump_major()?"
    assert called_names(prompt) == ["list", "sliding_window", "parse", "bump_major"]
    assert called_names("no call here") == []


def test_a_result_whose_string_fails_is_shown_by_its_repr_alone(tmp_path: Path) -> None:
    reader = _project(tmp_path)
    (tmp_path / "src" / "vers" / "odd.py").write_text(
        "class Odd:\n    def __repr__(self):\n        return 'Odd()'\n\n"
        "    def __str__(self):\n        raise RuntimeError('no text')\n\n\n"
        "def make_odd():\n    return Odd()\n"
    )
    assert _run(reader, "What does make_odd() return?").stdout == "Odd()\n"
