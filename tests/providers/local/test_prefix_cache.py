"""The prefix state cache on disk: keys, round trips, damaged files, and its bound."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nestor.providers.local.prefix_cache import PrefixCache, model_identity, prefix_key

TOKENS = [151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645, 198]
STATE = bytes(range(256)) * 40


def key_of(
    tokens: list[int] = TOKENS, *, model: str = "m", context_window: int = 16_384, engine: str = "0.3.36"
) -> str:
    return prefix_key(model=model, context_window=context_window, engine_version=engine, tokens=tokens)


def state_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def test_the_key_changes_with_model_context_engine_and_every_token() -> None:
    base = key_of()
    assert key_of() == base and len(base) == 64
    others = {
        key_of(model="other"),
        key_of(context_window=8_192),
        key_of(engine="0.3.37"),
        key_of(TOKENS[:-1]),
        key_of([*TOKENS[:-1], TOKENS[-1] + 1]),
        key_of([TOKENS[0] + 1, *TOKENS[1:]]),
    }
    assert base not in others and len(others) == 6


def test_the_model_identity_changes_when_the_file_does(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 60)
    first = model_identity(model)
    assert model_identity(model) == first
    assert str(model.resolve()) in first
    os.utime(model, ns=(1, 1))
    touched = model_identity(model)
    assert touched != first
    model.write_bytes(b"GGUF" + b"\0" * 61)
    os.utime(model, ns=(1, 1))
    assert model_identity(model) not in (first, touched)
    with pytest.raises(OSError):
        model_identity(tmp_path / "absent.gguf")


def test_a_stored_state_loads_back_for_the_same_key_and_tokens_only(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path / "cache")
    key = key_of()
    assert cache.load(key, TOKENS) is None and not cache.contains(key)

    size = cache.store(key, TOKENS, STATE)

    assert size == cache.path(key).stat().st_size > len(STATE)
    assert cache.contains(key) and state_files(tmp_path / "cache") == [f"{key}.state"]
    assert cache.load(key, TOKENS) == STATE
    assert cache.load(key_of(model="other"), TOKENS) is None  # no file under that key
    assert cache.load(key, TOKENS) == STATE  # still there


def damage_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1])


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def damage_state_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x01
    path.write_bytes(bytes(data))


def damage_magic(path: Path) -> None:
    path.write_bytes(b"X" + path.read_bytes()[1:])


def damage_extended(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\0")


@pytest.mark.parametrize(
    "damage", [damage_truncate, damage_empty, damage_state_byte, damage_magic, damage_extended]
)
def test_a_damaged_file_is_ignored_and_removed(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    cache = PrefixCache(tmp_path)
    key = key_of()
    cache.store(key, TOKENS, STATE)
    damage(cache.path(key))

    assert cache.load(key, TOKENS) is None

    assert not cache.path(key).exists()
    cache.store(key, TOKENS, STATE)  # the next evaluation writes it again
    assert cache.load(key, TOKENS) == STATE


def test_a_file_of_other_tokens_or_another_key_is_ignored_and_removed(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path)
    key = key_of()
    cache.store(key, [*TOKENS[:-1], 7], STATE)  # same count, a different last token
    assert cache.load(key, TOKENS) is None and not cache.path(key).exists()

    other = key_of(model="other")
    cache.store(other, TOKENS, STATE)
    cache.path(other).rename(cache.path(key))  # a file under a name that is not its key
    assert cache.load(key, TOKENS) is None and not cache.path(key).exists()


def test_the_cache_keeps_at_most_max_files_dropping_the_least_recently_used(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path, max_files=3)
    keys = [key_of([n, *TOKENS]) for n in range(5)]
    for age, key in enumerate(keys[:3]):
        cache.store(key, [age, *TOKENS], STATE)
        os.utime(cache.path(key), (1_000_000 + age, 1_000_000 + age))
    assert cache.load(keys[0], [0, *TOKENS]) == STATE  # used: now the most recent

    cache.store(keys[3], [3, *TOKENS], STATE)

    assert state_files(tmp_path) == sorted(f"{key}.state" for key in (keys[0], keys[2], keys[3]))
    cache.store(keys[4], [4, *TOKENS], STATE)
    assert len(state_files(tmp_path)) == 3 and cache.contains(keys[4])


def test_the_cache_stays_within_max_bytes_and_skips_a_state_larger_than_that(tmp_path: Path) -> None:
    probe = PrefixCache(tmp_path / "probe")
    probe.store(key_of(), TOKENS, STATE)
    file_size = probe.path(key_of()).stat().st_size
    cache = PrefixCache(tmp_path / "bounded", max_bytes=2 * file_size + file_size // 2)
    for n in range(4):
        assert cache.store(key_of([n, *TOKENS[1:]]), [n, *TOKENS[1:]], STATE)
        time.sleep(0.01)  # distinct modification times
    sizes = [path.stat().st_size for path in (tmp_path / "bounded").iterdir()]
    assert len(sizes) == 2 and sum(sizes) <= cache.max_bytes
    assert cache.contains(key_of([3, *TOKENS[1:]])) and cache.contains(key_of([2, *TOKENS[1:]]))

    tiny = PrefixCache(tmp_path / "tiny", max_bytes=len(STATE))
    assert tiny.store(key_of(), TOKENS, STATE) == 0
    assert not (tmp_path / "tiny").exists()


def test_a_write_that_fails_returns_false_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    cache = PrefixCache(blocker / "cache")
    assert cache.store(key_of(), TOKENS, STATE) == 0
    assert cache.load(key_of(), TOKENS) is None


def test_stale_temporary_files_are_removed_and_fresh_ones_kept(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path)
    stale = tmp_path / ".abc.123.tmp"
    fresh = tmp_path / ".def.456.tmp"
    stale.write_bytes(b"partial")
    fresh.write_bytes(b"being written")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))

    cache.store(key_of(), TOKENS, STATE)

    assert not stale.exists() and fresh.exists()


def test_discard_removes_a_file_and_ignores_a_missing_one(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path)
    cache.store(key_of(), TOKENS, STATE)
    cache.discard(key_of())
    cache.discard(key_of())
    assert not cache.contains(key_of())
