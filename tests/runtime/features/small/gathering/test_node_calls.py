"""Calls a question quotes in a JavaScript package: only plain calls of the package, run with node."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nestor.runtime.features.small.gathering.node_calls import node_calls
from nestor.runtime.features.small.gathering.reader import ProjectReader

INDEX = """function pad(text, width) { return text.padStart(width); }
function fail() { throw new RangeError('too wide'); }
module.exports = pad;
module.exports.pad = pad;
module.exports.fail = fail;
"""


def _package(root: Path) -> ProjectReader:
    root.mkdir()
    (root / "index.js").write_text(INDEX)
    (root / "package.json").write_text(json.dumps({"name": "@scope/pad-it", "main": "index.js"}))
    return ProjectReader(root)


def test_only_plain_calls_of_the_package_or_its_exports_are_taken(tmp_path: Path) -> None:
    reader = _package(tmp_path / "pkg")
    prompt = (
        "What do `pad_it.pad('ab', 4)` and pad('x', [1, {a: null}].length) return? "
        "And process.exit(1), require('fs').rmSync('.'), pad.constructor('return 1')(), other(1)?"
    )
    assert [call.expression for call in node_calls(prompt, reader)] == [
        "pad_it.pad('ab', 4)",
        "pad('x', [1, {a: null}].length)",
    ]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_the_script_prints_the_result_or_the_error_thrown(tmp_path: Path) -> None:
    reader = _package(tmp_path / "pkg")
    calls = node_calls("What do pad_it.pad('ab', 4) and pad_it.fail() give?", reader)
    outputs = [
        subprocess.run(
            ["node", "-e", call.script], cwd=reader.root, capture_output=True, text=True, check=True
        ).stdout.strip()
        for call in calls
    ]
    assert outputs == ["'  ab'", "RangeError: too wide"]
