"""``hover`` shows the model text from a file a read rule denies.

SECURITY.md, "Permission rules": read rules cover every read tool everywhere; "Language servers":
the files a server names pass the read rules (``definition`` leaves a denied file out; ``hover``
returns the denied file's docstring).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from nestor.testing import ServerToolCall
from tests.cli.support import git_repo
from tests.redteam.support import run_calls, user_config

pytestmark = pytest.mark.timeout(240)

PYLSP = Path(sys.executable).parent / "pylsp"


@pytest.mark.skipif(not PYLSP.exists() and shutil.which("pylsp") is None, reason="pylsp is not installed")
def test_hover_does_not_show_text_from_a_file_a_read_rule_denies(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n",
            "private/__init__.py": "",
            "private/conf.py": 'def api_key():\n    """The key is hunter2-SECRET."""\n    return 1\n',
            "app.py": "from private.conf import api_key\n\nprint(api_key())\n",
        },
    )
    user_config(
        tmp_path,
        '[permissions]\ndeny = ["Read(private/**)"]\n\n[lsp.pyright]\nenabled = false\n\n'
        "[lsp.basedpyright]\nenabled = false\n",
    )
    path = f"{PYLSP.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    results = run_calls(
        tmp_path,
        repo,
        [
            [ServerToolCall("view", {"path": "private/conf.py"})],
            [ServerToolCall("hover", {"path": "app.py", "line": 3, "symbol": "api_key"})],
        ],
        "--trust",
        env={"PATH": path},
        timeout=200,
    )
    assert "Permission denied" in results[0], results  # the rule holds for view
    assert "hunter2-SECRET" not in results[1], results
