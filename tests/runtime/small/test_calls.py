"""Running the calls a question writes out: which calls, imported from where, and what is printed."""

import subprocess
import sys
from pathlib import Path

from nestor.runtime.small.calls import UNBOUND_EXIT, call_script, import_statement, quoted_calls
from nestor.runtime.small.reader import ProjectReader

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
"""


def _project(root: Path) -> ProjectReader:
    package = root / "src" / "vers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from vers.version import Version\n")
    (package / "version.py").write_text(VERSION)
    (root / "tests").mkdir()
    (root / "tests" / "test_version.py").write_text("def Version():\n    pass\n")
    return ProjectReader(root)


def _run(reader: ProjectReader, question: str) -> subprocess.CompletedProcess[str]:
    [call] = quoted_calls(question)
    found = import_statement(reader, call.root)
    assert found is not None
    return subprocess.run(
        [sys.executable, "-c", call_script(call, *found)],
        cwd=reader.root,
        capture_output=True,
        text=True,
        check=False,
    )


def test_only_calls_with_literal_arguments_are_taken() -> None:
    calls = quoted_calls('Does parse(text) differ from Version.parse("1.2.3").bump()? And len("ab")?')
    assert [(call.expression, call.root, call.member) for call in calls] == [
        ("Version.parse('1.2.3').bump()", "Version", "parse"),
        ("len('ab')", "len", None),
    ]
    assert quoted_calls("What does the parser (the one in cli.py) do?") == []


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


def test_a_method_called_on_its_class_is_not_run(tmp_path: Path) -> None:
    reader = _project(tmp_path)
    assert _run(reader, "What does Version.bump() do?").returncode == UNBOUND_EXIT
