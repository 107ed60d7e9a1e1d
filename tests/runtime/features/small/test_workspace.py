"""What a test run's output says, in each language: the frames of its traceback."""

from nestor.runtime.features.small.workspace import traceback_locations


def test_frames_of_pytest_node_and_cargo_are_read_and_paths_outside_the_project_left_out() -> None:
    output = (
        "src/pkg/core.py:12: in add\n"
        "    stack: |-\n"
        "      TestContext.<anonymous> (test/parse.js:19:12)\n"
        "      parse (index.js:130:15)\n"
        "      Test.runInAsyncScope (node:async_hooks:206:9)\n"
        "      load (/usr/lib/node/fs.js:3:4)\n"
        "thread 'test_less' panicked at tests/test_req.rs:97:5:\n"
        "src/pkg/core.py:12: in add\n"
    )
    assert traceback_locations(output) == [
        ("src/pkg/core.py", 12),
        ("test/parse.js", 19),
        ("index.js", 130),
        ("tests/test_req.rs", 97),
    ]
