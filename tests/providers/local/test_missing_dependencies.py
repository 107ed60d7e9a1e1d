"""Without the ``[local]`` extra's packages, a ``local:`` model says what to install: one line, no traceback.

Each test runs the real command line in a subprocess in which a third-party package is made
unimportable the way Python itself marks one: ``sys.modules[name] = None`` makes ``import name``
raise ModuleNotFoundError and ``importlib.util.find_spec(name)`` answer None, as for a package that
is not installed. nestor's own code is left alone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import clean_env
from tests.providers.local.gguf_writer import qwen_like_kvs, vocabulary, write_gguf

WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from nestor.cli.entry import main
sys.exit(main(sys.argv[2:]))
"""


def run_without(packages: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    write_gguf(project / "tiny.gguf", qwen_like_kvs(vocabulary(16), bos=0, eos=1))
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, packages, *args],
        cwd=project,
        env=clean_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("packages", "cause"),
    [
        ("jinja2", "the local model needs the Python package 'jinja2', which is not installed"),
        ("llama_cpp", "the local model engine (llama-cpp-python) is not installed"),
        ("numpy", "the local model needs the Python package 'numpy', which is not installed"),
    ],
)
def test_a_missing_package_of_the_local_extra_says_what_to_install(
    packages: str, cause: str, tmp_path: Path
) -> None:
    done = run_without(packages, ["run", "--model", "local:tiny.gguf", "hi"], tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and lines[0] == f"error: {cause}", done.stderr
    assert lines[1].startswith("hint: ") and "pip install 'nestor[local]'" in lines[1]
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr


def test_the_default_local_model_without_jinja2(tmp_path: Path) -> None:
    # No model configured and no key: the embedded model is chosen, then cannot be built.
    done = run_without("jinja2", ["run", "hi"], tmp_path)
    assert done.returncode == 1
    assert "error: the local model needs the Python package 'jinja2'" in done.stderr
    assert "pip install 'nestor[local]'" in done.stderr and "unexpected" not in done.stderr
