"""A scenario told in prose, read into steps and run as the user told it."""

import subprocess
import sys
from pathlib import Path

from nestor.runtime.features.small.gathering.calls import import_statement
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.scenario import scenario, scenario_script

LRU_PROMPT = "With `c = LRUCache(maxsize=2)`, I set c['a'] = 1, c['b'] = 2, read c['a'], then set c['c'] = 3."
LRU = """from collections import OrderedDict


class LRUCache:
    def __init__(self, maxsize):
        self.maxsize, self.data = maxsize, OrderedDict()

    def __setitem__(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.maxsize:
            self.data.popitem(last=False)

    def __getitem__(self, key):
        self.data.move_to_end(key)
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        return f"LRUCache({dict(self.data)!r})"
"""


def test_the_steps_a_question_tells_are_read_in_order() -> None:
    told = scenario(LRU_PROMPT)

    assert told is not None
    assert told.name == "c" and told.setup.expression == "LRUCache(maxsize=2)"
    assert told.steps == ("c['a'] = 1", "c['b'] = 2", "c['a']", "c['c'] = 3")
    told = scenario('If d = Deque(), then d.append(3), d.appendleft("a") and d.pop(), what does d hold?')
    assert told is not None and told.steps == ("d.append(3)", 'd.appendleft("a")', "d.pop()")


def test_a_step_the_harness_cannot_take_means_no_run_at_all() -> None:
    # Not a literal: the scenario without that step would not be the user's.
    assert scenario('With s = Stack() I do s.push(os.system("id")) then s.pop()') is None
    assert scenario("With s = Stack() I set s.top = open('x') then s.pop()") is None
    assert scenario("a = b = c, and nothing else") is None
    assert scenario("With `c = LRUCache(2)` what happens?") is None  # no step: the call alone says it


def test_the_run_prints_each_read_and_the_object_at_the_end(tmp_path: Path) -> None:
    (tmp_path / "cache.py").write_text(LRU)
    told = scenario(LRU_PROMPT)
    assert told is not None
    imports = [import_statement(ProjectReader(tmp_path), name) for name in told.setup.names]
    assert imports == [(".", "from cache import LRUCache")]

    script = scenario_script(told, [found for found in imports if found])
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )

    assert run.stdout.splitlines() == [
        "c['a'] -> 1",
        "c is now LRUCache({'a': 1, 'c': 3})",  # b was the least recently used
        "its items in order: ['a', 'c']",
    ]
