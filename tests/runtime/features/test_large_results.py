"""LargeResultHook: big tool results become files; the model sees the head, the tail and the path."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, ToolCallPart, ToolReturnPart

from nestor.core.tokens import estimate_tokens
from nestor.runtime.features.large_results import (
    LargeResultHook,
    head_and_tail,
    result_file_name,
    save_result,
)
from nestor.runtime.kernel.hooks import RunState
from nestor.testing import ScriptedModel, call, reply
from nestor.tools._search import RipgrepLookup, RipgrepSetting
from nestor.tools.base import Tool, ToolContext
from nestor.tools.grep import GrepTool
from nestor.tools.view import ViewTool
from tests.runtime.support import Harness, tool_results

STATE = RunState(agent_id="agent-1", agent_type="coder")
SAVED_PATH = re.compile(r"saved to (\S+); use view")


def numbered_lines(count: int, width: int = 60) -> str:
    """``count`` lines of exactly ``width`` characters plus a line break, each naming its number."""
    return "".join(f"line {n:07d} ".ljust(width, "x") + "\n" for n in range(1, count + 1))


def tool_return(content: Any, *, tool_name: str = "bash", tool_call_id: str = "call_1") -> ToolReturnPart:
    return ToolReturnPart(
        tool_name, content, tool_call_id=tool_call_id, outcome="success", metadata={"kept": True}
    )


async def shorten(hook: LargeResultHook, result: ToolReturnPart) -> ToolReturnPart:
    call_part = ToolCallPart(result.tool_name, {}, tool_call_id=result.tool_call_id)
    return await hook.after_tool_result(STATE, call_part, result)


def saved_path(content: str) -> Path:
    found = SAVED_PATH.search(content.splitlines()[0])
    assert found is not None, content[:300]
    return Path(found.group(1))


# -- the hook on its own -----------------------------------------------------------------------


async def test_results_up_to_the_limit_are_returned_unchanged(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path / "scratch", max_tokens=100)
    for content in ("short", "x" * 400):  # 400 characters estimate exactly 100 tokens
        result = tool_return(content)
        assert await shorten(hook, result) is result
    assert not (tmp_path / "scratch").exists()


async def test_a_result_over_the_limit_is_saved_whole_and_shown_as_head_and_tail(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path / "scratch", max_tokens=1000, head_chars=600, tail_chars=300)
    text = numbered_lines(200)  # 12,200 characters, ~3,050 tokens
    original = tool_return(text)

    shortened = await shorten(hook, original)

    assert isinstance(shortened.content, str)
    path = saved_path(shortened.content)
    assert path == tmp_path / "scratch" / "tool-results" / "bash-call_1.txt"
    assert path.read_text(encoding="utf-8") == text
    note, rest = shortened.content.split("\n\n", 1)
    assert "\n" not in note
    assert "12200 characters in 200 lines (~3050 tokens)" in note
    assert "too large to show in full" in note and "offset/limit" in note and "grep" in note
    # 600 and 300 are multiples of the 61-character lines' neighbourhood: cuts snap to line ends.
    head_lines, tail_lines = 600 // 61, 300 // 61
    expected_head = "".join(text.splitlines(keepends=True)[:head_lines])
    expected_tail = "".join(text.splitlines(keepends=True)[-tail_lines:])
    omitted = 200 - head_lines - tail_lines
    omitted_chars = len(text) - len(expected_head) - len(expected_tail)
    marker = f"[... {omitted} lines / {omitted_chars} characters omitted ...]"
    assert rest == f"{expected_head}{marker}\n{expected_tail}"
    assert (shortened.tool_name, shortened.tool_call_id) == ("bash", "call_1")
    assert (shortened.outcome, shortened.metadata, shortened.timestamp) == (
        "success",
        {"kept": True},
        original.timestamp,
    )
    assert original.content == text


async def test_default_limits_keep_a_megabyte_result_small(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path / "scratch")
    text = numbered_lines(17_000)

    shortened = await shorten(hook, tool_return(text))

    assert isinstance(shortened.content, str)
    assert len(text) > 1_000_000
    assert 12_000 - 2 * 61 < len(shortened.content) < 12_600
    assert estimate_tokens(shortened.content) < 20_000 // 4
    assert saved_path(shortened.content).read_text(encoding="utf-8") == text


async def test_non_string_content_is_saved_as_json(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path / "scratch", max_tokens=50)
    content = {"rows": [{"id": n, "name": f"row {n}"} for n in range(100)]}

    shortened = await shorten(hook, tool_return(content))

    assert isinstance(shortened.content, str)
    assert json.loads(saved_path(shortened.content).read_text(encoding="utf-8")) == content


async def test_small_non_string_content_is_left_alone(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path / "scratch", max_tokens=50)
    result = tool_return({"ok": True})
    assert await shorten(hook, result) is result


@pytest.mark.parametrize(
    "tool_call_id",
    ["../../escape", "a/b\\c:d*?<>|", "", ".hidden", "\u00e9\u00e8 \u65e5\u672c", "x" * 500, "nul\x00byte"],
)
async def test_odd_call_ids_make_a_safe_file_inside_the_results_dir(
    tmp_path: Path, tool_call_id: str
) -> None:
    hook = LargeResultHook(tmp_path / "scratch", max_tokens=10)
    text = "y" * 100

    shortened = await shorten(hook, tool_return(text, tool_call_id=tool_call_id))

    assert isinstance(shortened.content, str)
    path = saved_path(shortened.content)
    assert path.parent == tmp_path / "scratch" / "tool-results"
    assert re.fullmatch(r"bash-[A-Za-z0-9._-]+\.txt", path.name)
    assert not path.name.startswith(".") and len(path.name) < 200
    assert path.read_text(encoding="utf-8") == text
    assert shortened.tool_call_id == tool_call_id


def test_ids_that_clean_up_alike_still_get_different_names() -> None:
    names = {result_file_name("bash", raw) for raw in ("a/b", "a:b", "a_b", "a?b")}
    assert len(names) == 4
    assert result_file_name("bash", "call_1") == "bash-call_1.txt"
    assert result_file_name("mcp/tool", "1").startswith("mcp_tool_")


async def test_a_reused_call_id_never_overwrites_an_earlier_result(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path / "scratch", max_tokens=10)

    first = await shorten(hook, tool_return("first " * 20, tool_call_id="call_0"))
    second = await shorten(hook, tool_return("second " * 20, tool_call_id="call_0"))

    assert isinstance(first.content, str) and isinstance(second.content, str)
    first_path, second_path = saved_path(first.content), saved_path(second.content)
    assert first_path.name == "bash-call_0.txt" and second_path.name == "bash-call_0-2.txt"
    assert first_path.read_text(encoding="utf-8") == "first " * 20
    assert second_path.read_text(encoding="utf-8") == "second " * 20


def test_save_result_keeps_line_endings_and_replaces_lone_surrogates(tmp_path: Path) -> None:
    path = save_result(tmp_path / "out", "t.txt", "a\r\nb\n\ud800c")
    assert path.read_bytes() == b"a\r\nb\n?c"


async def test_a_failed_write_falls_back_to_head_and_tail_and_says_why(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "tool-results").write_text("a file where the directory should be")
    hook = LargeResultHook(scratch, max_tokens=100, head_chars=120, tail_chars=60)
    text = numbered_lines(50)

    shortened = await shorten(hook, tool_return(text))

    assert isinstance(shortened.content, str)
    note, rest = shortened.content.split("\n\n", 1)
    assert "could not be saved to" in note and "File exists" in note and "the middle is lost" in note
    assert rest.startswith("line 0000001 ") and rest.endswith(text[-60:])
    assert "characters omitted ...]" in rest
    assert len(shortened.content) < 600


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only dirs")
async def test_a_read_only_scratch_dir_falls_back_too(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    scratch.chmod(0o500)
    try:
        hook = LargeResultHook(scratch, max_tokens=10)
        shortened = await shorten(hook, tool_return("z" * 200))
    finally:
        scratch.chmod(0o700)
    assert isinstance(shortened.content, str)
    assert "could not be saved" in shortened.content and "Permission denied" in shortened.content


def test_head_and_tail_are_scaled_down_to_fit_a_small_limit(tmp_path: Path) -> None:
    hook = LargeResultHook(tmp_path, max_tokens=300)
    assert hook.head_chars + hook.tail_chars <= 1200
    assert hook.head_chars == 2 * hook.tail_chars


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        LargeResultHook(tmp_path, max_tokens=0)
    with pytest.raises(ValueError):
        LargeResultHook(tmp_path, head_chars=-1)


def test_one_giant_line_is_cut_where_the_windows_end() -> None:
    text = "".join(chr(ord("a") + n % 26) for n in range(10_000))
    shown = head_and_tail(text, 100, 50)
    assert shown == f"{text[:100]}\n[... 1 line / 9850 characters omitted ...]\n{text[-50:]}"


def test_a_line_break_far_from_the_cut_is_not_used() -> None:
    text = "short\n" + "a" * 1000 + "\n" + "b" * 1000
    shown = head_and_tail(text, 200, 100)
    assert shown.startswith("short\n" + "a" * 194 + "\n[... ")
    assert shown.endswith("\n" + "b" * 100)


def test_text_that_head_and_tail_cover_is_returned_whole() -> None:
    assert head_and_tail("abc\ndef\n", 4, 4) == "abc\ndef\n"


# -- end to end through a real SessionAgent ------------------------------------------------------


class BigParams(BaseModel):
    lines: int = 17_000


class BigTool(Tool[BigParams]):
    name = "big"
    params_model = BigParams
    read_only = True

    @property
    def description(self) -> str:
        return "Returns a lot of text."

    async def run(self, params: BigParams, ctx: ToolContext) -> str:
        return numbered_lines(params.lines)


@pytest.fixture
def project_harness(tmp_path: Path) -> Iterator[Harness]:
    """A harness whose project is ``tmp_path/project``, so ``tmp_path/scratch`` lies outside it."""
    project = tmp_path / "project"
    project.mkdir()
    h = Harness(project)
    yield h
    h.database.close()


@pytest.mark.parametrize("rg_path", [RipgrepLookup.AUTO, None], ids=["ripgrep", "python"])
async def test_a_huge_result_becomes_a_file_the_model_reads_back_without_asking(
    project_harness: Harness, tmp_path: Path, rg_path: RipgrepSetting
) -> None:
    scratch = tmp_path / "scratch" / "session"
    full_text = numbered_lines(17_000)

    def read_back(messages: Any, info: Any) -> Any:
        (result,) = tool_results(messages[-1])
        assert isinstance(result.content, str)
        path = str(saved_path(result.content))
        return call("view", {"path": path, "offset": 9000, "limit": 3}, id="call-view") + call(
            "grep", {"pattern": "line 0016999 ", "path": path}, id="call-grep"
        )

    model = ScriptedModel([call("big", {}, id="call-big"), read_back, reply("Read it.")])
    agent = project_harness.agent(
        model,
        [BigTool(), ViewTool(), GrepTool(rg_path=rg_path)],
        hooks=[LargeResultHook(scratch)],
        scratch_dir=scratch,
        asker=None,
    )

    result = await agent.run("Run big and read the middle.")

    assert result.stop_reason == "completed" and result.text == "Read it."
    assert len(full_text) > 1_000_000
    second_request = model.requests[1].messages
    request_size = estimate_tokens(ModelMessagesTypeAdapter.dump_json(second_request).decode())
    assert request_size < 20_000 // 4
    (shortened,) = tool_results(second_request[-1])
    assert isinstance(shortened.content, str)
    path = saved_path(shortened.content)
    assert path.is_relative_to(scratch) and not path.is_relative_to(project_harness.root)
    assert path.read_text(encoding="utf-8") == full_text
    stored_results = [
        part.content
        for message in project_harness.messages.list(agent.session_id)
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "big"
    ]
    assert stored_results == [shortened.content]

    viewed, grepped = tool_results(model.requests[2].messages[-1])
    assert viewed.outcome == "success", viewed.content
    assert isinstance(viewed.content, str)
    assert viewed.content.startswith("  9001\tline 0009001 xxx")
    assert "  9003\tline 0009003 " in viewed.content and "offset=9003" in viewed.content
    assert grepped.outcome == "success", grepped.content
    assert isinstance(grepped.content, str)
    assert f"{path}:\n  16999: line 0016999 " in grepped.content
    assert "permission_asked" not in project_harness.types()
