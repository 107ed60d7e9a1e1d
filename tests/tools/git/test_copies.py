"""A batch's copies of a repository: packed, cloned and diffed by nestor's git, none of its commands run."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.tools.git.copies import (
    CopyError,
    bundle,
    clone_bundle,
    clone_url,
    is_git_url,
    patch,
    resolve_commit,
)
from tests.hostile_repos import ATTACKS, Attack, build, committed_repo, git


async def copy_of(directory: Path, tmp_path: Path, ref: str | None = None) -> tuple[Path, str]:
    commit = await resolve_commit(directory, ref)
    (tmp_path / "bundles").mkdir(exist_ok=True)
    packed = tmp_path / "bundles" / "repo.bundle"
    await bundle(directory, commit, packed)
    checkout = tmp_path / "checkout"
    await clone_bundle(packed, commit, checkout)
    return checkout, commit


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
async def test_packing_cloning_and_diffing_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, attack: Attack
) -> None:
    directory, marker = build(attack, tmp_path)

    checkout, commit = await copy_of(directory, tmp_path)
    (checkout / "a.txt").write_text("changed\n")
    changes = await patch(checkout, commit)

    assert not marker.exists(), marker.read_text()
    assert "a.txt" in changes.files
    assert "+changed" in changes.diff


async def test_a_checkout_is_at_the_ref_and_its_patch_has_edits_new_files_and_deletions(
    tmp_path: Path,
) -> None:
    repo = committed_repo(tmp_path / "repo")
    git(repo, "tag", "v1")
    (repo / "b.txt").write_text("later\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "later")
    (repo / ".gitignore").write_text("ignored\n")

    checkout, commit = await copy_of(repo, tmp_path, "v1")
    assert commit == git(repo, "rev-parse", "v1").strip()
    assert not (checkout / "b.txt").exists()
    assert (await patch(checkout, commit)).files == ()

    (checkout / "a.txt").unlink()
    (checkout / "new.txt").write_text("new\n")
    (checkout / "with space é.txt").write_text("spaced\n")
    changes = await patch(checkout, commit)

    assert changes.files == ("a.txt", "new.txt", "with space é.txt")  # -z: names as they are, unquoted
    assert "deleted file mode" in changes.diff and "+new" in changes.diff
    # The checkout's own index is untouched: the new files are still untracked there.
    status = git(checkout, "status", "--short")
    assert status.startswith(" D a.txt\n?? new.txt\n")


async def test_a_missing_ref_or_a_folder_without_a_repository_is_a_one_line_error(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    with pytest.raises(CopyError, match="has no commit nope"):
        await resolve_commit(repo, "nope")
    with pytest.raises(CopyError, match="not a ref name"):
        await resolve_commit(repo, "--upload-pack=touch x")
    (tmp_path / "plain").mkdir()
    with pytest.raises(CopyError, match="not in a git repository"):
        await resolve_commit(tmp_path / "plain", None)


def test_git_urls_are_told_from_folders() -> None:
    assert is_git_url("https://example.com/a/b.git")
    assert is_git_url("git@example.com:a/b.git")
    assert is_git_url("file:///srv/repo")
    assert not is_git_url("services/billing")
    assert not is_git_url("/abs/path")


async def test_a_git_url_is_cloned_at_its_ref(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    git(repo, "tag", "v1")
    (repo / "b.txt").write_text("later\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "later")

    commit = await clone_url(f"file://{repo}", "v1", tmp_path / "clone")

    assert commit == git(repo, "rev-parse", "v1").strip()
    assert (tmp_path / "clone" / "a.txt").exists() and not (tmp_path / "clone" / "b.txt").exists()
    with pytest.raises(CopyError, match="neither a folder nor a git URL"):
        await clone_url("ext::sh -c touch% /tmp/x", None, tmp_path / "other")


async def test_a_checkout_whose_path_holds_a_colon_or_a_quote_is_diffed(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo")
    folder = tmp_path / 'job a:b "c"'
    folder.mkdir()

    checkout, commit = await copy_of(repo, folder)
    (checkout / "a.txt").write_text("changed\n")

    assert (await patch(checkout, commit)).files == ("a.txt",)
