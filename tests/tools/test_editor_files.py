"""The file tools through an editor's files: buffers read, writes through it, failures in a line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.view import ViewParams, ViewTool
from nestor.tools.write import WriteParams, WriteTool


class Editor:
    """An editor holding buffers; it refuses writes when told to."""

    def __init__(self, buffers: dict[Path, str], *, refuse: bool = False, reads: bool = True) -> None:
        self.buffers = buffers
        self.refuse = refuse
        self.reads = reads

    async def read_text(self, path: Path) -> str | None:
        if not self.reads or path not in self.buffers:
            return None
        return self.buffers.get(path)

    async def write_text(self, path: Path, text: str) -> bool:
        if self.refuse:
            raise RuntimeError("buffer is read-only")
        self.buffers[path] = text
        return True


async def test_an_edit_applies_to_the_buffer_and_keeps_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    editor = Editor({path: "x = 1  # typed\n"})
    ctx = ToolContext(project_root=tmp_path)

    viewed = await ViewTool(editor).run(ViewParams(path="a.py"), ctx)
    edited = await EditTool(files=editor).run(EditParams(path="a.py", old_string="1", new_string="2"), ctx)

    assert "x = 1  # typed" in viewed.content
    assert editor.buffers[path] == "x = 2  # typed\n" and path.read_text() == "x = 1\n"
    assert "+x = 2  # typed" in edited.metadata["diff"]


async def test_a_refused_write_is_a_tool_error_and_a_fifo_is_never_handed_to_the_editor(
    tmp_path: Path,
) -> None:
    ctx = ToolContext(project_root=tmp_path)
    with pytest.raises(ToolError, match="the editor refused it"):
        await WriteTool(files=Editor({}, refuse=True)).run(WriteParams(path="new.txt", content="x"), ctx)
    os.mkfifo(tmp_path / "pipe")
    editor = Editor({})
    with pytest.raises(ToolError, match="not a regular file"):
        await WriteTool(files=editor).run(WriteParams(path="pipe", content="x"), ctx)
    assert editor.buffers == {}


async def test_an_editor_without_reads_leaves_reading_to_the_disk(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("on disk\n")
    viewed = await ViewTool(Editor({}, reads=False)).run(
        ViewParams(path="a.txt"), ToolContext(project_root=tmp_path)
    )
    assert "on disk" in viewed.content
