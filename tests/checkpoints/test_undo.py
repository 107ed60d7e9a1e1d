"""Undo of a prompt and of an agent, over real snapshots of real folders (git and not)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nestor.checkpoints.undo import apply_undo, latest_undoable_prompt, plan_agent_undo, plan_prompt_undo
from nestor.core.errors import CheckpointError
from tests.checkpoints.support import MAX_FILE_BYTES, Project, files_of, open_project
from tests.hostile_repos import git


@pytest.fixture(params=["git repository", "plain folder"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "project"
    root.mkdir()
    (root / "keep.txt").write_text("keep\n")
    (root / "change.txt").write_text("before\n")
    (root / "delete.txt").write_text("delete me\n")
    if request.param == "git repository":
        git(root, "init", "-q", "-b", "main")
        git(root, "add", ".")
        git(root, "commit", "-qm", "init")
    opened = open_project(root, tmp_path / "data")
    yield opened
    opened.close()


async def run_bash(project: Project, agent: str, call_id: str, script: str) -> None:
    """A shell command as the hooks see it: starting, running (here, at once), finished."""
    await project.call(agent, call_id)
    await asyncio.to_thread(subprocess.run, ["sh", "-c", script], cwd=project.root, check=True)
    await project.recorder.finished(call_id)


async def test_undo_puts_back_what_a_command_created_changed_and_deleted(project: Project) -> None:
    before = files_of(project.root)
    seq = project.prompt("change things")
    await run_bash(project, "main", "c1", "echo new > new.txt; echo after > change.txt; rm delete.txt")
    assert files_of(project.root) != before

    plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    assert {(file.path, file.action) for file in plan.files} == {
        ("new.txt", "delete"),
        ("change.txt", "restore"),
        ("delete.txt", "create"),
    }
    assert "-after\n+before\n" in next(file.diff for file in plan.files if file.path == "change.txt")
    await apply_undo(project.recorder, plan)

    assert files_of(project.root) == before
    assert latest_undoable_prompt(project.recorder) is None  # its changes are marked undone


async def test_each_prompt_is_undone_in_turn_and_a_rewind_goes_back_further(project: Project) -> None:
    first = project.prompt("one")
    await run_bash(project, "main", "c1", "echo 1 > change.txt")
    second = project.prompt("two")
    await run_bash(project, "main", "c2", "echo 2 > change.txt; echo x > x.txt")

    assert latest_undoable_prompt(project.recorder) == second
    await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, second, "prompt 2"))
    assert (project.root / "change.txt").read_text() == "1\n" and not (project.root / "x.txt").exists()
    assert latest_undoable_prompt(project.recorder) == first

    await run_bash(project, "main", "c3", "echo 3 > change.txt")  # prompt 2 goes on after the undo
    await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, first, "prompt 1"))
    assert (project.root / "change.txt").read_text() == "before\n"


async def test_changes_made_outside_nestor_are_left_alone(project: Project) -> None:
    seq = project.prompt("edit")
    await project.call("main", "c1", "edit", frozenset({"change.txt"}))
    (project.root / "change.txt").write_text("by the agent\n")
    (project.root / "keep.txt").write_text("by the user, in an editor\n")  # no call of nestor's names it
    await project.recorder.finished("c1")

    await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, seq, "prompt 1"))

    assert (project.root / "change.txt").read_text() == "before\n"
    assert (project.root / "keep.txt").read_text() == "by the user, in an editor\n"


async def test_binary_files_come_back_byte_for_byte_and_large_ones_are_left_and_named(
    project: Project,
) -> None:
    binary = bytes(range(256)) * 3
    (project.root / "image.bin").write_bytes(binary)
    (project.root / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    (project.root / ".gitattributes").write_text("* text=auto eol=lf\n*.bin filter=lfs\n")
    seq = project.prompt("break them")
    await run_bash(
        project,
        "main",
        "c1",
        f"printf x > image.bin; printf 'a\\nb\\n' > crlf.txt; "
        f"head -c {MAX_FILE_BYTES + 1} /dev/zero > big.dat",
    )

    plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    assert plan.left == ("big.dat",)
    assert "binary file image.bin" in next(file.diff for file in plan.files if file.path == "image.bin")
    await apply_undo(project.recorder, plan)

    assert (project.root / "image.bin").read_bytes() == binary
    assert (project.root / "crlf.txt").read_bytes() == b"a\r\nb\r\n"
    assert (project.root / "big.dat").stat().st_size == MAX_FILE_BYTES + 1


async def test_links_modes_and_a_file_that_became_a_folder(project: Project) -> None:
    (project.root / "run.sh").write_text("#!/bin/sh\n")
    (project.root / "run.sh").chmod(0o755)
    os.symlink("keep.txt", project.root / "link")
    before = files_of(project.root)
    seq = project.prompt("restructure")
    await run_bash(
        project,
        "main",
        "c1",
        "chmod -x run.sh; rm link; ln -s change.txt link; "
        "rm change.txt; mkdir -p change.txt/deep; echo x > change.txt/deep/y",
    )

    await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, seq, "prompt 1"))

    assert files_of(project.root) == before
    assert os.access(project.root / "run.sh", os.X_OK)
    assert os.readlink(project.root / "link") == "keep.txt"


async def test_two_parallel_agents_are_told_apart_and_one_is_undone_alone(project: Project) -> None:
    project.prompt("delegate")
    await project.call("agent-a", "a1", "write", frozenset({"a.txt"}))
    await project.call("agent-b", "b1", "edit", frozenset({"change.txt"}))
    (project.root / "a.txt").write_text("from a\n")
    (project.root / "change.txt").write_text("from b\n")
    await project.recorder.finished("a1")  # its snapshot sees both files changed
    await project.recorder.finished("b1")

    rows = project.checkpoints.of_session(project.session_id)
    authors = {change.path: change.agent_id for row in rows for change in row.changes}
    assert authors == {"a.txt": "agent-a", "change.txt": "agent-b"}

    plan = await plan_agent_undo(project.recorder, {"agent-b"}, "agent b")
    assert [file.path for file in plan.files] == ["change.txt"] and plan.refusal is None
    await apply_undo(project.recorder, plan)
    assert (project.root / "change.txt").read_text() == "before\n"
    assert (project.root / "a.txt").read_text() == "from a\n"


async def test_an_agent_undo_is_refused_when_another_agent_changed_the_file_later(project: Project) -> None:
    project.prompt("delegate")
    await project.call("agent-a", "a1", "edit", frozenset({"change.txt"}))
    (project.root / "change.txt").write_text("from a\n")
    await project.recorder.finished("a1")
    await run_bash(project, "agent-b", "b1", "echo 'from b' >> change.txt")

    plan = await plan_agent_undo(project.recorder, {"agent-a"}, "agent a")

    assert plan.refusal is not None and "change.txt (changed later by agent-b)" in plan.refusal
    with pytest.raises(CheckpointError):
        await apply_undo(project.recorder, plan)
    assert (project.root / "change.txt").read_text() == "from a\nfrom b\n"


async def test_a_restore_that_cannot_be_done_in_full_changes_nothing(project: Project) -> None:
    seq = project.prompt("edit")
    await run_bash(project, "main", "c1", "echo 1 > change.txt; echo 1 > keep.txt; echo 1 > new.txt")
    (project.root / "keep.txt").chmod(0o444)
    after = files_of(project.root)

    with pytest.raises(CheckpointError, match=r"keep\.txt: it is read-only"):
        await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, seq, "prompt 1"))

    assert files_of(project.root) == after
    assert latest_undoable_prompt(project.recorder) == seq


async def test_a_write_failing_midway_is_rolled_back(project: Project) -> None:
    seq = project.prompt("edit")
    await run_bash(
        project, "main", "c1", "echo 1 > change.txt; echo 1 > keep.txt; echo 1 > new.txt; rm delete.txt"
    )
    after = files_of(project.root)
    immutable = project.root / "keep.txt"
    chattr = await asyncio.to_thread(subprocess.run, ["chattr", "+i", str(immutable)], capture_output=True)
    if chattr.returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        with pytest.raises(CheckpointError, match="nothing was changed"):
            await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, seq, "prompt 1"))
    finally:
        await asyncio.to_thread(subprocess.run, ["chattr", "-i", str(immutable)], check=True)

    assert files_of(project.root) == after
    assert not any(path.name.startswith(".nestor-undo-") for path in project.root.iterdir())


async def test_files_changed_since_the_preview_are_not_overwritten(project: Project) -> None:
    seq = project.prompt("edit")
    await run_bash(project, "main", "c1", "echo 1 > change.txt")
    plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    (project.root / "change.txt").write_text("before\n")  # the user put it back by hand meanwhile

    with pytest.raises(CheckpointError, match="changed since the undo was shown"):
        await apply_undo(project.recorder, plan)


async def test_a_resumed_session_undoes_what_an_earlier_process_recorded(project: Project) -> None:
    seq = project.prompt("edit")
    await run_bash(project, "main", "c1", "echo 1 > change.txt")
    project.recorder = project.new_recorder()
    await run_bash(project, "main", "c2", "echo 2 > keep.txt")

    await apply_undo(project.recorder, await plan_prompt_undo(project.recorder, seq, "prompt 1"))

    assert (project.root / "change.txt").read_text() == "before\n"
    assert (project.root / "keep.txt").read_text() == "keep\n"


async def test_a_file_too_large_to_snapshot_is_never_deleted_when_it_shrinks(project: Project) -> None:
    (project.root / "data.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))  # there before: no snapshot holds it
    seq = project.prompt("shrink")
    await run_bash(project, "main", "c1", "printf small > data.bin; echo 1 > change.txt")
    project.recorder = project.new_recorder()  # a later process knows it too

    plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    await apply_undo(project.recorder, plan)

    assert [file.path for file in plan.files] == ["change.txt"] and "data.bin" in plan.left
    assert (project.root / "data.bin").read_bytes() == b"small"


@pytest.mark.parametrize(
    "command",
    ["rm -r d; ln -s {outside} d", "mv d d.bak; ln -s {outside} d", "rm -r d; ln -s {outside}/sub d"],
    ids=["removed", "moved aside", "a link to a folder holding the same names"],
)
async def test_a_folder_replaced_by_a_link_is_put_back_and_nothing_written_through_it(
    project: Project, tmp_path: Path, command: str
) -> None:
    (project.root / "d").mkdir()
    (project.root / "d" / "f.txt").write_text("precious\n")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "f.txt").write_text("outside\n")  # git sees d/f.txt "modified" through the link
    before = files_of(project.root)
    seq = project.prompt("break things")
    await run_bash(project, "main", "c1", command.format(outside=outside))
    assert project.recorder.stopped is None

    plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    assert ("d/f.txt", "create") in {(file.path, file.action) for file in plan.files}
    await apply_undo(project.recorder, plan)

    assert not (project.root / "d").is_symlink()
    assert files_of(project.root) == before
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == ["sub", "sub/f.txt"]
    assert (outside / "sub" / "f.txt").read_text() == "outside\n"


def _forget_object(project: Project, object_id: str) -> None:
    """Delete an object from the shadow repository (as a prune or a damaged store would)."""
    (project.recorder.shadow.git_dir / "objects" / object_id[:2] / object_id[2:]).unlink()


def _blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


async def test_a_snapshot_the_index_cannot_take_is_taken_again_with_its_changes(project: Project) -> None:
    seq = project.prompt("edit")
    await run_bash(project, "main", "c1", "echo 1 > change.txt")
    # The index names a blob nobody has any more: write-tree fails, the index is built again.
    _forget_object(project, _blob_id(project.root / "keep.txt"))
    await run_bash(project, "main", "c2", "echo 2 > new.txt")

    assert project.recorder.stopped is None
    plan = await plan_prompt_undo(project.recorder, seq, "prompt 1")
    planned = {(file.path, file.action) for file in plan.files}
    assert planned == {("change.txt", "restore"), ("new.txt", "delete")}


async def test_a_snapshot_that_cannot_build_on_the_one_before_is_said(project: Project) -> None:
    notices: list[str] = []
    project.recorder = project.new_recorder(notify=notices.append)
    project.prompt("edit")
    await run_bash(project, "main", "c1", "echo 1 > change.txt")
    # Both the index's blob and the last snapshot's tree are gone: nothing to compare with.
    tree = project.recorder.tree
    assert tree is not None
    for object_id in (_blob_id(project.root / "change.txt"), tree):
        _forget_object(project, object_id)
    await run_bash(project, "main", "c2", "echo 2 > keep.txt")

    assert project.recorder.stopped is None  # later changes are still recorded
    [notice] = notices
    assert notice.startswith("a snapshot could not be taken on top of the one before (git ")
    assert notice.endswith("what changed since cannot be undone; later changes can")
