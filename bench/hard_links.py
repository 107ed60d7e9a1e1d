"""What judging a read costs when deny rules must also cover hard links of the files they cover.

A tree of files is judged file by file (as grep and glob judge what they find) against two deny
rules: ``view(.env)``, whose files are one path, and ``Read(**/*.pem)``, whose files lie anywhere
(its first judgement of a file with two names walks the whole tree). Side by side in one run, per
file, median of five rounds, interleaved:

(a) every file with one name: one ``stat`` more than the path rules alone, no walk (the common
    case); (s) is that ``stat`` alone, the whole cost this check adds to (a);
(b) every file with a second name, the links older than the walk: the walk is kept.

The targets: (s) at most a third of (a), and (b) at most twice (a). Also printed once: the first
walk of the tree, and a round right after every file got its second name (each file's ``st_ctime``
is then newer than the walk, which is read again: incrementally, per directory).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy

DIRECTORIES = 200
FILES_PER_DIRECTORY = 25
ROUNDS = 5
TARGET_STAT_SHARE = 1 / 3
TARGET_TWO_NAMES = 2.0


def _tree(root: Path) -> list[Path]:
    files: list[Path] = []
    for index in range(DIRECTORIES):
        folder = root / f"pkg{index // 20}" / f"mod{index}"
        folder.mkdir(parents=True)
        for number in range(FILES_PER_DIRECTORY):
            path = folder / f"f{number}.py"
            path.write_text("x = 1\n")
            files.append(path)
    (root / "pkg0" / "key.pem").write_text("secret")
    return files


def _judge(policy: PermissionPolicy, files: list[Path]) -> float:
    """Seconds per file to judge every file as a read found by a search."""
    started = time.perf_counter()
    for path in files:
        policy.withholds(PermissionRequest("grep", "read", str(path), "Read", target_is_real=True))
    return (time.perf_counter() - started) / len(files)


def _stat(files: list[Path]) -> float:
    """Seconds per file of the one ``stat`` a file with one name costs the check."""
    started = time.perf_counter()
    for path in files:
        os.stat(path)
    return (time.perf_counter() - started) / len(files)


def main() -> None:
    """Print the per-file costs side by side, and the walks' costs."""
    print("read rules and hard links: judging one file found by a search")
    with tempfile.TemporaryDirectory(prefix="nestor-bench-links-") as folder:
        single = Path(folder) / "single"
        linked = Path(folder) / "linked"
        single_files = _tree(single)
        linked_files = _tree(linked)
        deny = ["view(.env)", "Read(**/*.pem)"]
        ruled_single = PermissionPolicy.from_config([], [], deny, project_root=str(single))
        ruled_linked = PermissionPolicy.from_config([], [], deny, project_root=str(linked))
        for path in linked_files:
            os.link(path, path.with_suffix(".link"))
        started = time.perf_counter()
        _judge(ruled_linked, linked_files[:1])  # the first file with two names walks the tree
        walk = time.perf_counter() - started
        fresh = _judge(ruled_linked, linked_files)
        time.sleep(0.2)  # the links are now older than any walk to come, by more than the margin
        times: dict[str, list[float]] = {"stat": [], "one": [], "two": []}
        for _ in range(ROUNDS):
            times["stat"].append(_stat(single_files))
            times["one"].append(_judge(ruled_single, single_files))
            times["two"].append(_judge(ruled_linked, linked_files))
    stat_s, one_s, two_s = (statistics.median(times[key]) for key in ("stat", "one", "two"))
    files = len(single_files)
    print(f"tree: {files} files in {DIRECTORIES} directories; rules view(.env), Read(**/*.pem)")
    print(f"(a) one name:            {one_s * 1e6:7.1f} us per file")
    print(f"(s) of which the check:  {stat_s * 1e6:7.1f} us per file  {stat_s / one_s:5.2f} of (a)")
    print(f"(b) two names, walked:   {two_s * 1e6:7.1f} us per file  {two_s / one_s:5.2f}x (a)")
    print(f"first walk of the tree: {walk * 1000:.1f} ms (once per rule and project)")
    print(
        f"right after every file got its second name: {fresh * 1e6:.0f} us per file (the walk is read again)"
    )
    ok = stat_s / one_s <= TARGET_STAT_SHARE and two_s / one_s <= TARGET_TWO_NAMES
    verdict = "meets" if ok else "MISSES"
    print(f"{verdict} the targets (the check at most a third of (a), two names at most {TARGET_TWO_NAMES}x)")


if __name__ == "__main__":
    main()
