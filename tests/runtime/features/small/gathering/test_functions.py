from nestor.runtime.features.small.gathering.functions import (
    FunctionSpan,
    function_at,
    functions_named,
    methods_of,
    rewritten_function,
    without_function,
)

SOURCE = """class Inventory:
    @property
    def size(self):
        return 0

    def low_stock(self, threshold):
        return [i for i in self.items if i.quantity < threshold]
"""


def test_finding_functions_by_name_and_by_line() -> None:
    [span] = functions_named("inv.py", SOURCE, {"low_stock"})
    assert span == FunctionSpan("inv.py", "low_stock", 6, 7)
    assert function_at("inv.py", SOURCE, 7) == span
    assert function_at("inv.py", SOURCE, 1) is None


def test_a_method_rewritten_at_the_left_margin_is_indented_back() -> None:
    [span] = functions_named("inv.py", SOURCE, {"low_stock"})
    original = span.text(SOURCE)
    reply = (
        "Here it is:\n```python\ndef low_stock(self, threshold):\n"
        "    return [i for i in self.items if i.quantity <= threshold]\n```\nDone."
    )
    new = rewritten_function(reply, span, original)
    expected = (
        "    def low_stock(self, threshold):\n"
        "        return [i for i in self.items if i.quantity <= threshold]\n"
    )
    assert new == expected


def test_unusable_rewrites_are_refused() -> None:
    [span] = functions_named("inv.py", SOURCE, {"low_stock"})
    original = span.text(SOURCE)
    assert rewritten_function("```python\ndef other(x):\n    return x\n```", span, original) is None
    assert (
        rewritten_function("```python\ndef low_stock(self, threshold)\n    return\n```", span, original)
        is None
    )
    unchanged = (
        "```python\n" + original.replace("    def", "def", 1).replace("        return", "    return") + "```"
    )
    assert rewritten_function(unchanged, span, original) is None


def test_markup_and_prose_after_the_function_are_left_out() -> None:
    [span] = functions_named("inv.py", SOURCE, {"low_stock"})
    reply = (
        '```python\n<function file="inv.py">\ndef low_stock(self, threshold):\n'
        "    return [i for i in self.items if i.quantity <= threshold]\n</function>\nThis fixes it.\n```"
    )
    new = rewritten_function(reply, span, span.text(SOURCE))
    assert new is not None and new.endswith("i.quantity <= threshold]\n")


def test_methods_of_lists_the_methods_a_class_defines_itself() -> None:
    source = (
        "class Base:\n    def get(self):\n        return 1\n\n\n"
        "class FIFO(Base):\n    def put(self, key):\n        def helper():\n            pass\n\n"
        "    async def pop(self):\n        return 2\n"
    )
    found = methods_of("cache.py", source, {"FIFO"})
    assert [(span.name, span.start, span.end) for span in found] == [("put", 7, 9), ("pop", 11, 12)]
    assert methods_of("cache.py", "class (", {"FIFO"}) == []


def test_a_function_is_taken_out_with_its_decorators() -> None:
    [size] = functions_named("inv.py", SOURCE, {"size"})
    assert without_function(SOURCE, size) == (
        "class Inventory:\n\n    def low_stock(self, threshold):\n"
        "        return [i for i in self.items if i.quantity < threshold]\n"
    )
