"""The real eval suite checks itself: every task loads, its reference passes, doing nothing fails.

For each task of ``evals/tasks``, in fresh workspaces of its repository:

- the reference outcome (its edits and answer) passes the task's check;
- an empty answer with no edits fails it, even with the test command left out, so no task can be
  passed by a check that holds vacuously or by the repository's tests alone;
- for a fix task, the setup breaks the repository's tests (the bug is real), and the reference
  edits alone do not touch the tests.

Plus the suite's shape: enough tasks, repositories and every kind. (The reference runs of the edit
tasks run each repository's whole test suite, so they also show that the vendored tests pass.)
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import sys
from collections import Counter
from pathlib import Path

import pytest

from evals.checks import apply_reference, check_outcome
from evals.processes import run_in_group
from evals.tasks import KINDS, REPOS_DIR, Task, load_tasks
from evals.workspace import prepare_workspace

TASKS = load_tasks()
BY_ID = {task.id: task for task in TASKS}
EDIT_TASKS = [task for task in TASKS if not task.is_question]
FIX_TASKS = [task for task in TASKS if task.kind == "fix"]
TESTS_TASKS = [task for task in TASKS if task.kind == "tests"]
REPOS = sorted({task.repo for task in TASKS})

MINIMUM_PER_KIND = {
    "locate": 5,
    "lookup": 5,
    "explain": 3,
    "tour": 3,
    "fix": 4,
    "rename": 2,
    "feature": 2,
    "multi": 2,
    "delegate": 2,
    **dict.fromkeys(("callers", "list", "predict", "error", "followup", "covers", "history", "docs"), 3),
    **dict.fromkeys(("refactor", "config", "refuse"), 2),
}
LANGUAGES = {"cookie": "javascript", "bytes": "javascript", "semver-rs": "rust"}
"""Each repository's language: Python unless named here."""


def fresh_workspace(task: Task, tmp_path: Path, name: str) -> Path:
    parent = tmp_path / name
    parent.mkdir()
    return prepare_workspace(task, parent)


def ids(tasks: list[Task]) -> list[str]:
    return [task.id for task in tasks]


def test_the_suite_has_enough_tasks_repositories_and_every_kind() -> None:
    assert len(TASKS) >= 90
    assert len(REPOS) >= 8
    assert len(KINDS) >= 15
    assert {LANGUAGES.get(repo, "python") for repo in REPOS} == {"python", "javascript", "rust"}
    assert 3 * sum(task.blind for task in TASKS) >= len(TASKS), "at least a third written blind"
    kinds = Counter(task.kind for task in TASKS)
    assert set(kinds) == set(KINDS)
    for kind, minimum in MINIMUM_PER_KIND.items():
        assert kinds[kind] >= minimum, f"{kind}: {kinds[kind]} tasks, fewer than {minimum}"
    tours = Counter(task.repo for task in TASKS if task.kind == "tour")
    assert set(tours) == set(REPOS), "every repository has a tour task"


def test_every_repository_says_where_it_comes_from() -> None:
    listing = (REPOS_DIR / "README.md").read_text(encoding="utf-8")
    for repo in REPOS:
        source = (REPOS_DIR / repo / "SOURCE.txt").read_text(encoding="utf-8")
        assert re.search(r"^PROVENANCE: \S", source, re.MULTILINE), repo
        assert f"`{repo}/`" in listing, repo


@pytest.mark.parametrize("task_id", ids(TASKS))
def test_task_is_well_formed(task_id: str) -> None:
    task = BY_ID[task_id]
    check = task.check
    assert task.prompt
    assert task.reference.answer, "every task has a reference answer"
    for pattern in (*check.answer_all, *check.answer_none):
        re.compile(pattern)
    if task.is_question:
        assert check.answer_all, "a question is judged on its answer"
        assert not task.setup and not task.reference.edits and check.test_command is None
    else:
        assert task.reference.edits, "an edit task has reference edits"
        assert check.test_command is not None, "an edit task runs the repository's tests"
        assert check.allowed, "an edit task says which files its request allows to change"
    if task.kind == "fix":
        assert task.setup, "a fix task plants its bug in the setup"
        assert any(glob.startswith("test") for glob in check.unchanged), "a fix task may not edit the tests"
        assert check.changed, "a fix task names the file the fix belongs in"
    if task.kind in ("rename", "feature"):
        assert check.files_all, "a rename or feature task looks for the new name in the files"


@pytest.mark.parametrize("task_id", ids(TASKS))
def test_the_reference_outcome_passes(task_id: str, tmp_path: Path) -> None:
    task = BY_ID[task_id]
    workspace = fresh_workspace(task, tmp_path, "reference")
    answer = apply_reference(task, workspace)

    outcome = check_outcome(task, workspace, answer)

    assert outcome.solved, outcome.failures


@pytest.mark.parametrize("task_id", ids(TASKS))
def test_doing_nothing_fails_even_without_the_tests(task_id: str, tmp_path: Path) -> None:
    task = BY_ID[task_id]
    workspace = fresh_workspace(task, tmp_path, "nothing")
    without_tests = dataclasses.replace(task, check=dataclasses.replace(task.check, test_command=None))

    outcome = check_outcome(without_tests, workspace, "")

    assert not outcome.solved


# For each question: an answer a user would accept, phrased unlike the reference, and a plausible
# wrong one. Each question's check must take the first and reject the second.
ANSWERS: dict[str, tuple[str, str]] = {
    "cachetools-locate-ttlcache": (
        "`class TTLCache(_TimedCache)` lives in cachetools/__init__.py.",
        "TTLCache is defined in src/cachetools/ttl.py.",
    ),
    "cachetools-locate-default-key": (
        "hashkey() from src/cachetools/keys.py: cached() defaults to key=keys.hashkey "
        "(typedkey is the typed one).",
        "The key is built by functools._make_key, in the standard library's functools.py.",
    ),
    "cachetools-lookup-ttl-default": (
        "Results expire after 10 minutes: ttl defaults to 600 seconds.",
        "The default TTL is 60 seconds.",
    ),
    "cachetools-lookup-value-too-large": (
        "You get a ValueError('value too large') from Cache.__setitem__.",
        "It raises KeyError, because the item gets evicted right away.",
    ),
    "cachetools-explain-ttl-expire": (
        "expire() drops every entry whose TTL has elapsed (at the timer's current time unless you pass one) "
        "and returns a list of the (key, value) tuples it removed.",
        "expire() sets a new expiry time on every item and returns None.",
    ),
    "cachetools-tour": (
        "cachetools: extensible memoizing collections and decorators. The code is in src/cachetools "
        "(__init__.py, func.py, keys.py), the tests in tests/. Run `tox`, or `python -m pytest`.",
        "This is a Node.js project: install it with npm and run npm test.",
    ),
    "cachetools-multi-func-defaults": (
        "maxsize defaults to 128, and ttl_cache stores results in a cachetools.TTLCache.",
        "maxsize is unbounded (None) by default, and ttl_cache uses an LRUCache.",
    ),
    "cachetools-delegate-lock": (
        "The explore agent found that func.py passes lock=RLock() (threading.RLock) to cached().",
        "They pass a plain threading.Lock().",
    ),
    "semver-locate-cli-parser": (
        "createparser() in semver/cli.py builds it.",
        "It is built in src/semver/__main__.py.",
    ),
    "semver-locate-deprecated": (
        "They live in src/semver/_deprecated.py and semver/__init__.py re-exports them.",
        "They are methods of the Version class in src/semver/version.py.",
    ),
    "semver-lookup-prerelease-token": (
        "The token defaults to 'rc', so 3.4.5 becomes 3.4.5-rc.1.",
        "It defaults to 'alpha'.",
    ),
    "semver-lookup-parse-error": (
        "ValueError: '1.2 is not valid SemVer string'.",
        "It raises semver.InvalidVersion.",
    ),
    "semver-explain-next-version": (
        "For 1.2.3 it bumps the patch and appends rc.1: 1.2.4-rc.1. For 1.2.3-rc.1 it only increments "
        "the prerelease: 1.2.3-rc.2.",
        "1.2.3 becomes 1.3.0-rc.1 and 1.2.3-rc.1 becomes 1.2.3-rc.2.",
    ),
    "semver-tour": (
        "python-semver, a semantic versioning library. Sources in src/semver (version.py, cli.py), tests "
        "in tests/, run with pytest.",
        "It is a Django app: run python manage.py test.",
    ),
    "semver-multi-compare": (
        "It returns -1, since a prerelease sorts before its release. Build metadata doesn't affect the "
        "comparison at all.",
        "It returns 1, and build metadata makes a version newer.",
    ),
    "stockroom-locate-home-env": (
        "resolve_data_dir() in stockroom/config.py reads it (through HOME_ENV_VAR).",
        "It is read in src/stockroom/cli.py, in main().",
    ),
    "stockroom-locate-sku-validation": (
        "stockroom/models.py: validate_sku() checks it against SKU_PATTERN.",
        "src/stockroom/inventory.py, in Inventory.get.",
    ),
    "stockroom-lookup-low-stock-default": (
        "It defaults to 5 (DEFAULT_LOW_STOCK_THRESHOLD).",
        "The default threshold is 3.",
    ),
    "stockroom-lookup-withdraw-error": (
        "InsufficientStockError, a subclass of StockroomError.",
        "It raises a ValueError.",
    ),
    "stockroom-explain-atomic-save": (
        "It writes to a temp file from tempfile.mkstemp in the same folder, then os.replace()s it over "
        "inventory.json, so the swap is atomic.",
        "It copies inventory.json to a backup first and restores the backup if writing fails.",
    ),
    "stockroom-tour": (
        "stockroom is a command-line inventory tracker. The package is in src/stockroom (cli.py, "
        "inventory.py, storage.py, ...), the tests in tests/: run python -m pytest.",
        "It is a Rust crate: run cargo test.",
    ),
    "stockroom-delegate-exit-code": (
        "It exits with status 1 (EXIT_ERROR); main() in src/stockroom/cli.py decides that.",
        "It exits with code 2, set in cli.py.",
    ),
    "itsdangerous-locate-zlib-compression": (
        "Look at url_safe.py: the mixin class URLSafeSerializerMixin compresses in its dump_payload method "
        "and decompresses in load_payload.",
        "Compression happens in encoding.py, in base64_encode().",
    ),
    "itsdangerous-locate-max-age-check": (
        "That's TimestampSigner.unsign() in itsdangerous/timed.py -- "
        "it raises SignatureExpired when age > max_age.",
        "TimedSerializer.loads() in serializer.py checks the age.",
    ),
    "itsdangerous-lookup-key-derivation": (
        "Signer.default_key_derivation is 'django-concat', so that's what you get "
        "(salt + b'signer' + key, hashed).",
        "It defaults to hmac: the key is HMAC(secret_key, salt).",
    ),
    "itsdangerous-lookup-serializer-salt": (
        "The salt defaults to `itsdangerous` (Serializer.__init__ has salt=b'itsdangerous').",
        "It signs with b'itsdangerous.Signer', the Signer's default salt.",
    ),
    "itsdangerous-explain-int-bytes": (
        "int_to_bytes packs the int as an 8-byte big-endian unsigned struct and lstrips the zero bytes: "
        "0 -> b\"\" and 1000 -> b'\\x03\\xE8'. "
        "bytes_to_int pads back to 8 bytes and unpacks: b'\\x01\\x00' -> 256.",
        "int_to_bytes(0) is b'\\x00', int_to_bytes(1000) is b'\\xe8\\x03' (little-endian), and "
        "bytes_to_int(b'\\x01\\x00') is 1.",
    ),
    "itsdangerous-tour": (
        "ItsDangerous signs data so you can hand it to untrusted clients and detect tampering. The package "
        "is src/itsdangerous (signer.py, timed.py, serializer.py, url_safe.py); tests are in tests/. "
        "Run python -m pytest.",
        "It's a JavaScript package: npm install, then npm test.",
    ),
    "itsdangerous-multi-exceptions": (
        "(1) BadPayload. (2) BadTimeSignature is its base. (3) hmac.compare_digest, constant time.",
        # Part 2 wrong, with a raise of BadTimeSignature in the facts under it: not its answer.
        "(1) BadPayload (2) BadSignature (3) hmac.compare_digest.\n\nRaised in the code shown: "
        "`raise BadTimeSignature('timestamp missing', payload=result)` when `sep not in result`.",
    ),
    "itsdangerous-delegate-separator": (
        "The agent reports: the separator can't be a base64 character (letters, digits, '-', '_', '='); "
        "Signer.__init__ raises a ValueError.",
        "Only '.' is reserved, and using it raises BadSignature.",
    ),
    "toolz-locate-countby": (
        "countby is in toolz.recipes (the recipes.py module), not itertoolz.",
        "It's in toolz/functoolz.py.",
    ),
    "toolz-locate-should-curry": (
        "In toolz.functoolz, the curry class's _should_curry method; __call__ consults it on TypeError.",
        "That's decided in curry.__call__ in toolz/curried/__init__.py.",
    ),
    "toolz-lookup-fold-chunksize": (
        "chunksize=128 by default.",
        "The default chunksize is 1024.",
    ),
    "toolz-lookup-diff-error": (
        "TypeError: 'Too few sequences given (min 2 required)' once you iterate.",
        "It raises ValueError.",
    ),
    "toolz-explain-partition": (
        "partition drops the incomplete tail: [(0, 1, 2), (3, 4, 5)]. partition_all keeps it as a short "
        "tuple: [(0, 1, 2), (3, 4, 5), (6, 7)].",
        "Both pad the last chunk with None: [(0, 1, 2), (3, 4, 5), (6, 7, None)].",
    ),
    "toolz-tour": (
        "Functional utilities for iterables, functions and dictionaries. Code: toolz/itertoolz.py, "
        "toolz/functoolz.py, toolz/dicttoolz.py; tests in toolz/tests. Run `pytest` at the root.",
        "A Rust crate of iterator helpers: cargo test.",
    ),
    "toolz-multi-memoize-comp": (
        "A plain dictionary, unbounded. Unhashable args give TypeError('Arguments to memoized function must "
        "be hashable'). comp is compose.",
        "It uses an LRU cache capped at 128 entries; unhashable arguments just bypass the cache; comp is "
        "compose_left.",
    ),
    "toolz-delegate-tlz-pipe": (
        "Per the explore agent, just pipe: TlzLoader's always_from_toolz set in tlz/_build_tlz.py.",
        "curry and compose, configured in tlz/__init__.py.",
    ),
}
QUESTIONS = [task for task in TASKS if task.is_question]


def test_every_question_has_answers_to_try() -> None:
    # The first questions keep their answers here; later ones carry a wrong answer in their file.
    assert set(ANSWERS) <= set(ids(QUESTIONS))
    assert all(BY_ID[task_id].reference.wrong for task_id in set(ids(QUESTIONS)) - set(ANSWERS))


@pytest.fixture(scope="module")
def question_workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One untouched workspace per repository, shared by the question tasks (they have no setup),
    and one of its own for each question with a history or uncommitted edits."""
    workspaces: dict[str, Path] = {}
    for task in QUESTIONS:
        key = task.id if task.history or task.uncommitted else task.repo
        if key not in workspaces:
            workspaces[key] = prepare_workspace(task, tmp_path_factory.mktemp(key))
    return workspaces


@pytest.mark.parametrize("task_id", ids(QUESTIONS))
def test_a_question_takes_a_differently_phrased_answer_and_rejects_a_wrong_one(
    task_id: str, question_workspaces: dict[str, Path]
) -> None:
    task = BY_ID[task_id]
    good, wrong = ANSWERS.get(task_id, (task.reference.answer, task.reference.wrong))
    workspace = question_workspaces[task_id if task.history or task.uncommitted else task.repo]

    assert check_outcome(task, workspace, good).solved, check_outcome(task, workspace, good).failures
    assert not check_outcome(task, workspace, wrong).solved


@pytest.mark.parametrize("task_id", ids(FIX_TASKS))
def test_the_setup_of_a_fix_task_breaks_the_tests(task_id: str, tmp_path: Path) -> None:
    task = BY_ID[task_id]
    assert task.check.test_command is not None
    workspace = fresh_workspace(task, tmp_path, "broken")

    command = task.check.test_command.replace("{python}", shlex.quote(sys.executable))
    finished = run_in_group(command, cwd=workspace, timeout_s=300)

    assert finished.returncode != 0, finished.stdout[-2000:]
    assert not any(edit.file.startswith(("tests/", "test/")) for edit in task.reference.edits)


# For each task asking for tests: a test that passes and tests something, but not the bug the
# request is about. The check must reject it: a test is asked for to catch that bug.
BESIDE_THE_POINT: dict[str, str] = {
    "stockroom-tests-restore-movements": (
        "\n\ndef test_restock_adds(inventory):\n"
        '    inventory.restock("TOOL-0001", 3)\n    assert inventory.get("TOOL-0001").quantity == 15\n'
    ),
    "toolz-tests-assoc-unchanged": "\n\ndef test_assoc_sets():\n    assert assoc({}, 'x', 2) == {'x': 2}\n",
    "bytes-tests-upper-case-unit": (
        "\ndescribe('units', function(){\n  it('formats kb', function(){\n"
        "    assert.equal(bytes.format(12 * 1024 * 1024, {unit: 'kb'}), '12288kb');\n  });\n});\n"
    ),
}


@pytest.mark.parametrize("task_id", ids(TESTS_TASKS))
def test_a_test_beside_the_point_fails_a_tests_task(task_id: str, tmp_path: Path) -> None:
    task = BY_ID[task_id]
    workspace = fresh_workspace(task, tmp_path, "beside")
    (edit,) = {edit.file: edit for edit in task.reference.edits}.values()
    with (workspace / edit.file).open("a", encoding="utf-8") as module:
        module.write(BESIDE_THE_POINT[task_id])

    outcome = check_outcome(task, workspace, task.reference.answer)

    assert not outcome.solved
    assert any("tests failed" in failure for failure in outcome.failures), outcome.failures


def test_a_per_kind_sample_covers_every_kind_and_repository_by_rule() -> None:
    from evals.runner import per_kind

    tasks = load_tasks()
    one = per_kind(tasks, 1)
    assert Counter(task.kind for task in one) == Counter(dict.fromkeys(KINDS, 1))
    # Spread over the repositories: every language, and most repositories, in a sample of one each.
    assert {LANGUAGES.get(task.repo, "python") for task in one} == {"python", "javascript", "rust"}
    assert len({task.repo for task in one}) >= len(REPOS) - 2
    chosen = {task.id for task in one}
    assert [task.id for task in one] == [task.id for task in tasks if task.id in chosen]  # suite order
    two = per_kind(tasks, 2)
    assert chosen <= {task.id for task in two}
    for kind in KINDS:
        available = sum(task.kind == kind for task in tasks)
        assert sum(task.kind == kind for task in two) == min(2, available)
