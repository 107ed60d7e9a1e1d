"""Which questions a permission mode answers without a person (ACP's modes and the SDK's)."""

from __future__ import annotations

from nestor.app.permission_modes import answers_itself
from nestor.core.permission import PermissionRequest

EDIT = PermissionRequest("write", "write", "/project/a.py", "Write a.py")
OUTSIDE = PermissionRequest("write", "write", "/etc/hosts", "Write /etc/hosts", outside_project=True)
COMMAND = PermissionRequest("bash", "execute", "make", "Run: make")


def test_ask_answers_nothing_and_yolo_everything_no_rule_or_git_dir_keeps_asked() -> None:
    for request in (EDIT, OUTSIDE, COMMAND):
        assert not answers_itself("ask", request, None, must_ask=False)
        assert answers_itself("yolo", request, None, must_ask=False)
        assert not answers_itself("yolo", request, "bash(make)", must_ask=False)
        assert not answers_itself("yolo", request, None, must_ask=True)


def test_accept_edits_answers_only_edits_inside_the_project() -> None:
    assert answers_itself("accept_edits", EDIT, None, must_ask=False)
    assert not answers_itself("accept_edits", OUTSIDE, None, must_ask=False)
    assert not answers_itself("accept_edits", COMMAND, None, must_ask=False)
    assert not answers_itself("accept_edits", EDIT, "write(*.py)", must_ask=False)
