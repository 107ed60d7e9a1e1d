"""Reading a request to add a function, method or property, and the code the model wrote for it."""

import pytest

from nestor.runtime.features.small.understanding.additions import (
    Addition,
    asks_for_tests_of_code,
    class_span,
    import_line,
    merged_test_module,
    new_function,
    read_addition,
    uses,
    written_test_module,
)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (
            "Add a `search(text)` method to Inventory that returns the matching items. Add a test too.",
            Addition("search", "method", "Inventory"),
        ),
        (
            "Add a read-only `is_prerelease` property to Version: True when it has a prerelease part.",
            Addition("is_prerelease", "property", "Version"),
        ),
        (
            "Please add a clear_expired method to the TTLCache class.",
            Addition("clear_expired", "method", "TTLCache"),
        ),
        ("Implement a `total` property on `Cart`.", Addition("total", "property", "Cart")),
        ("Add a function `slugify` in utils.py", Addition("slugify", "function", None, ("utils",))),
        # Found blind on toolz: a request that does not start with "add".
        (
            "I'd like an `invert(d, factory=dict)` function in dicttoolz that swaps keys and values.",
            Addition("invert", "function", None, ("dicttoolz",)),
        ),
    ],
)
def test_read_addition(prompt: str, expected: Addition) -> None:
    assert read_addition(prompt) == expected


@pytest.mark.parametrize(
    "prompt",
    [
        "Add a test for format_money.",  # no function to add
        "Why does the `search` method of Inventory ignore case?",  # a question
        "Add a `search` method.",  # a method of no class
    ],
)
def test_read_addition_is_none_for_other_requests(prompt: str) -> None:
    assert read_addition(prompt) is None


def test_new_function_keeps_its_decorators_and_leaves_the_rest_out() -> None:
    reply = (
        "Here it is:\n```python\n    @property\n    def is_prerelease(self) -> bool:\n"
        '        """True with a prerelease part."""\n        return bool(self._prerelease)\n\n'
        "print(Version('1.0.0').is_prerelease)\n```\nDone."
    )
    assert new_function(reply, "is_prerelease") == (
        '@property\ndef is_prerelease(self) -> bool:\n    """True with a prerelease part."""\n'
        "    return bool(self._prerelease)\n"
    )
    assert new_function("```python\ndef other():\n    pass\n```", "is_prerelease") is None
    assert new_function("```python\ndef is_prerelease(self:\n```", "is_prerelease") is None


def test_a_written_test_module_needs_a_test_function() -> None:
    module = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    assert written_test_module(f"```python\n{module}```") == module
    assert written_test_module("```python\ndef helper():\n    pass\n```") is None
    assert written_test_module("```python\ndef test_(:\n```") is None


def test_class_span_and_import_line() -> None:
    source = "import x\n\n\n@dataclass\nclass Item:\n    a: int\n\n    def f(self):\n        pass\n\nY = 1\n"
    assert class_span(source, "Item") == (4, 9)
    assert class_span(source, "Missing") is None
    assert (
        import_line("src/stockroom/inventory.py", "Inventory") == "from stockroom.inventory import Inventory"
    )
    assert import_line("pkg/__init__.py", "Cache") == "from pkg import Cache"
    assert import_line("my-scripts/run.py", "main") is None


def test_new_tests_are_merged_into_a_module_without_replacing_what_it_has() -> None:
    existing = (
        "import pytest\nfrom pkg import thing\n\n\nclass TestThing:\n"
        "    def test_a(self):\n        assert thing()\n"
    )
    written = (
        "import pytest\nfrom pkg import signed_at\n\n\nclass TestThing:\n    def test_b(self):\n"
        "        assert signed_at(1)\n\n\n@pytest.mark.slow\ndef test_c():\n    assert signed_at(2)\n"
    )
    merged = merged_test_module(existing, written)
    head = "import pytest\nfrom pkg import thing\nfrom pkg import signed_at\n\n\nclass TestThing:"
    assert merged.startswith(head)
    assert "class TestThing_added:\n    def test_b(self):" in merged
    assert merged.endswith("@pytest.mark.slow\ndef test_c():\n    assert signed_at(2)\n")
    assert uses(written, "signed_at") and not uses("from pkg import signed_at\n", "signed_at")


@pytest.mark.parametrize(
    ("prompt", "asks"),
    [
        ("Add a test for frequencies.", True),
        ("Write unit tests that check Inventory.remove with a missing item.", True),
        ("Please add some tests covering `parse`.", True),
        ("Add a `reset` method to Counter.", False),
        ("Which test covers frequencies?", False),
        ("Fix the failing test for parse.", False),
    ],
)
def test_a_request_for_tests_of_existing_code_is_read(prompt: str, asks: bool) -> None:
    assert asks_for_tests_of_code(prompt) is asks
