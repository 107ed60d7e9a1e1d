from nestor.runtime.features.small.acting.edit_blocks import EditBlock, locate, parse_edit_blocks

REPLY = """Here is the fix.

src/app/math.py
<<<<<<< SEARCH
    return a - b
=======
    return a + b
>>>>>>> REPLACE

```python
tests/test_math.py
<<<<<<< SEARCH
=======
def test_add():
    assert add(1, 2) == 3
>>>>>>> REPLACE
```
Unfinished:
<<<<<<< SEARCH
x = 1
"""


def test_parse_blocks_with_paths_and_empty_search() -> None:
    blocks = parse_edit_blocks(REPLY)
    assert blocks == [
        EditBlock("src/app/math.py", "    return a - b\n", "    return a + b\n"),
        EditBlock("tests/test_math.py", "", "def test_add():\n    assert add(1, 2) == 3\n"),
    ]


def test_locate_exact_and_appending() -> None:
    text = "def add(a, b):\n    return a - b\n"
    located = locate(EditBlock("m.py", "    return a - b\n", "    return a + b\n"), text)
    assert (
        located is not None and text.replace(located.old, located.new) == "def add(a, b):\n    return a + b\n"
    )
    appended = locate(EditBlock("m.py", "", "X = 1\n"), text)
    assert appended is not None
    assert text.replace(appended.old, appended.new) == text + "X = 1\n"


def test_locate_forgives_lost_indentation_and_line_numbers() -> None:
    text = "class A:\n    def f(self):\n        return 1\n"
    block = EditBlock("a.py", "3: return 1\n", "return 2\n")
    located = locate(block, text)
    assert located is not None
    assert text.replace(located.old, located.new) == "class A:\n    def f(self):\n        return 2\n"


def test_locate_refuses_ambiguous_or_missing_text() -> None:
    text = "x = 1\nx = 1\n"
    assert locate(EditBlock("a.py", "x = 1\n", "x = 2\n"), text) is None
    assert locate(EditBlock("a.py", "y = 1\n", "y = 2\n"), text) is None


PACKAGE_JSON = """{
  "name": "cookie",
  "main": "index.js",
  "engines": {
    "node": ">= 0.6"
  },
  "scripts": {
    "test": "node --test test/"
  }
}
"""


def test_context_the_model_wrapped_around_its_change_is_dropped_until_the_change_is_found() -> None:
    # What the 1.5B model wrote for "require Node.js 18 or newer": the field inside braces of its
    # own, and `}` where the file has `},`. The changed line is in the file; the wrapping is not.
    block = EditBlock(
        "package.json",
        '{\n  "engines": {\n    "node": ">= 0.6"\n  }\n}\n',
        '{\n  "engines": {\n    "node": ">= 18"\n  }\n}\n',
    )

    located = locate(block, PACKAGE_JSON)

    assert located is not None
    assert PACKAGE_JSON.replace(located.old, located.new, 1) == PACKAGE_JSON.replace(">= 0.6", ">= 18")


def test_a_change_whose_own_lines_are_not_in_the_file_is_still_not_found() -> None:
    misremembered = EditBlock(
        "package.json",
        '{\n  "engines": {\n    "node": "> 0.6"\n  }\n}\n',
        '{\n  "engines": {\n    "node": ">= 18"\n  }\n}\n',
    )
    # The line it changes is not in the file: the shared context alone does not place the change.
    only_context = EditBlock(
        "package.json", '  "main": "index.js",\n  "bin": "x",\n', '  "main": "index.js",\n  "bin": "y",\n'
    )

    assert locate(misremembered, PACKAGE_JSON) is None
    assert locate(only_context, PACKAGE_JSON) is None
