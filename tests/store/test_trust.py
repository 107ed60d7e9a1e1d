import json
from pathlib import Path

import pytest

from nestor.core.errors import StoreError
from nestor.store.trust import TRUST_FILE_NAME, TrustedFolders


@pytest.fixture
def folders(tmp_path: Path) -> TrustedFolders:
    return TrustedFolders(tmp_path / "data")


def test_nothing_is_trusted_until_the_user_says_so(folders: TrustedFolders, tmp_path: Path) -> None:
    assert not folders.is_trusted(tmp_path)
    assert folders.folders() == []
    assert not folders.path.exists()


def test_trusting_a_folder_trusts_what_is_inside_it_and_survives_a_new_store(
    folders: TrustedFolders, tmp_path: Path
) -> None:
    project = tmp_path / "work" / "project"
    (project / "sub").mkdir(parents=True)
    folders.trust(project)
    again = TrustedFolders(tmp_path / "data")
    assert again.is_trusted(project) and again.is_trusted(project / "sub")
    assert not again.is_trusted(tmp_path / "work")
    assert not again.is_trusted(tmp_path / "work" / "project-evil")


def test_trust_is_keyed_by_the_resolved_path(folders: TrustedFolders, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    entry = folders.trust(link)
    assert entry.path == real
    assert folders.is_trusted(real) and folders.is_trusted(tmp_path / "real" / ".." / "link")


def test_trusting_twice_keeps_one_entry_and_revoke_removes_it(
    folders: TrustedFolders, tmp_path: Path
) -> None:
    first = folders.trust(tmp_path)
    assert folders.trust(tmp_path) == first
    assert len(folders.folders()) == 1
    assert folders.revoke(tmp_path) is True
    assert folders.revoke(tmp_path) is False
    assert not folders.is_trusted(tmp_path)


@pytest.mark.parametrize("content", ["{not json", '{"folders": "all"}', '{"folders": [{"path": 1}]}', "[]"])
def test_an_unreadable_file_trusts_nothing_and_is_never_overwritten(
    folders: TrustedFolders, tmp_path: Path, content: str
) -> None:
    folders.path.parent.mkdir(parents=True)
    folders.path.write_text(content, encoding="utf-8")
    assert not folders.is_trusted(tmp_path)
    with pytest.raises(StoreError) as caught:
        folders.trust(tmp_path)
    assert TRUST_FILE_NAME in caught.value.message and "\n" not in caught.value.message
    assert caught.value.hint and "delete" in caught.value.hint
    assert folders.path.read_text(encoding="utf-8") == content


def test_the_file_is_plain_json_the_user_can_read(folders: TrustedFolders, tmp_path: Path) -> None:
    folders.trust(tmp_path)
    document = json.loads(folders.path.read_text(encoding="utf-8"))
    assert document["folders"][0]["path"] == str(tmp_path.resolve())
    assert [path.name for path in folders.path.parent.iterdir()] == [TRUST_FILE_NAME]
