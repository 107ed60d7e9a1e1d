"""Copies of a repository made by nestor's own git: a bundle at a commit, a clone of it, its patch.

A batch (``nestor batch``) runs each job in a checkout of its own. The source repository is a
stranger's: it is read through a view (:mod:`~nestor.tools.git.runner`), so none of its config,
hooks or filters run, and packed into a bundle at the job's commit. The checkout is a clone of
that bundle, made with no config but git's own defaults (no user or system config, no template
hooks), so what the repository's files say (``.gitattributes`` filters) names nothing to run.
After the job its patch is read through a view again: the agent and the job's setup command may
have written the checkout's ``.git``, which then is a stranger's too.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nestor.core.errors import NestorError
from nestor.tools.git.location import find_repository
from nestor.tools.git.runner import (
    GIT_TIMEOUT_S,
    GitOutput,
    git_environment,
    prepare_repository,
    private_view,
    run_launch,
    sandboxed_launch,
)
from nestor.tools.programs import find_program
from nestor.tools.sandbox.detect import Availability, detect
from nestor.tools.sandbox.launch import SandboxError, sandboxed
from nestor.tools.sandbox.policy import SandboxPolicy

COPY_TIMEOUT_S = 600.0
"""A bundle, clone or patch of a large repository takes longer than a listing."""
_BRANCH = "nestor-batch"
_REF_TEXT = re.compile(r"[\w./@{}~^+-]{1,200}")
_URL = re.compile(r"(https?|ssh|git|file)://\S+|[\w.-]+@[\w.-]+:\S+")
_OWN_CONFIG = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


class CopyError(NestorError):
    """A repository could not be read, packed, cloned or diffed (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class Patch:
    """What a checkout's work tree changed against a commit.

    Attributes:
        diff: ``git diff --binary`` from the commit to the work tree, new files included.
        files: The paths it changes, from the work tree's top.

    """

    diff: str
    files: tuple[str, ...]


def is_git_url(text: str) -> bool:
    """Whether ``text`` names a remote repository (a URL or ``user@host:path``) rather than a folder."""
    return _URL.fullmatch(text) is not None


async def resolve_commit(directory: Path, ref: str | None) -> str:
    """The commit ``ref`` names in the repository holding ``directory`` (its ``HEAD`` when None).

    Raises:
        CopyError: No repository there, or no commit by that name.

    """
    repository = find_repository(directory)
    if repository is None:
        raise CopyError(f"{directory} is not in a git repository", hint="give a repository's folder or URL")
    if ref is not None and not _REF_TEXT.fullmatch(ref):
        raise CopyError(f"{ref!r} is not a ref name or commit", hint="give a branch, tag or commit id")
    name = repository.head().commit if ref is None else repository.resolve_name(ref) or ref
    if name is None:
        raise CopyError(f"{directory} has no commit yet", hint="commit something, or give a ref")
    outputs = await run_git_in_view(directory, ("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"))
    if not outputs[-1].ok:
        raise CopyError(f"{directory} has no commit {ref or 'HEAD'}", hint="check the job's ref")
    return outputs[-1].stdout.decode().strip()


async def bundle(directory: Path, commit: str, output: Path) -> None:
    """Pack the history of ``commit`` of the repository holding ``directory`` into the file ``output``.

    Raises:
        CopyError: git failed (its message is in the error).

    """
    args = ("bundle", "create", "--quiet", str(output), f"refs/heads/{_BRANCH}")
    outputs = await run_git_in_view(directory, args, writable=(output.parent,), refs={_BRANCH: commit})
    _check(outputs[-1], f"packing {directory}")


async def clone_bundle(source: Path, commit: str, destination: Path) -> None:
    """Clone the bundle ``source`` into the new folder ``destination``, its files at ``commit``.

    Raises:
        CopyError: git failed.

    """
    os.mkdir(destination)
    clone = ("clone", "--quiet", "--template=", "--no-checkout", str(source), str(destination))
    policy = SandboxPolicy.read_only(own_dirs=(destination,))
    await _own_git(clone, destination, policy, visible=(source.parent,))
    await checkout(destination, commit)


async def clone_url(url: str, ref: str | None, destination: Path) -> str:
    """Clone the remote ``url`` into the new folder ``destination`` and check out ``ref``; its commit.

    The user's own git config applies (their credential helpers, ``insteadOf`` rules), not the
    system's template hooks; the clone may use the network and write only ``destination``.

    Raises:
        CopyError: Not a URL, or git failed.

    """
    if not is_git_url(url):
        raise CopyError(f"{url!r} is neither a folder nor a git URL", hint="give a path or a URL")
    os.mkdir(destination)
    clone = ("-c", "protocol.ext.allow=never", "clone", "--quiet", "--template=", "--no-checkout", "--")
    policy = SandboxPolicy(mode="workspace-write", network=True, temp_dirs=(), writable_git=True)
    await _own_git((*clone, url, str(destination)), destination, policy, user_config=True)
    commit = await resolve_commit(destination, ref)
    await checkout(destination, commit)
    return commit


async def checkout(work_tree: Path, commit: str) -> None:
    """Check ``commit`` out, detached, in a clone nestor just made (its config is git's defaults).

    Raises:
        CopyError: git failed.

    """
    args = (
        "-C",
        str(work_tree),
        "-c",
        "advice.detachedHead=false",
        "checkout",
        "--quiet",
        "--detach",
        commit,
    )
    await _own_git(args, work_tree, SandboxPolicy.read_only(own_dirs=(work_tree,)))


async def patch(work_tree: Path, base: str) -> Patch:
    """The changes of ``work_tree`` against the commit ``base``: edits, new files, deletions.

    Read with an index and an object store of the view's own, so the checkout stays as it is.

    Raises:
        CopyError: git failed.

    """
    # One run: the changed paths (--raw, each NUL-terminated) then the patch, after an empty field.
    diff = (
        "diff",
        "--cached",
        "--raw",
        "-p",
        "-z",
        "--binary",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
    )
    outputs = await run_git_in_view(
        work_tree,
        ("read-tree", base),
        ("add", "--all", "--", "."),
        (*diff, "--no-textconv", base, "--"),
        scratch=True,
        timeout=COPY_TIMEOUT_S,
    )
    for done in outputs:
        _check(done, f"reading the changes of {work_tree}")
    return _split_raw_patch(outputs[2].stdout)


def _split_raw_patch(output: bytes) -> Patch:
    r"""``git diff --raw -p -z``'s output: ``:meta\0path\0`` per file, an empty field, the patch."""
    files: list[str] = []
    position = 0
    while output.startswith(b":", position):
        meta_end = output.index(b"\0", position)
        path_end = output.index(b"\0", meta_end + 1)
        files.append(output[meta_end + 1 : path_end].decode("utf-8", errors="replace"))
        position = path_end + 1
    if output.startswith(b"\0", position):
        position += 1
    return Patch(output[position:].decode("utf-8", errors="replace"), tuple(files))


async def run_git_in_view(
    directory: Path,
    *steps: Sequence[str],
    writable: tuple[Path, ...] = (),
    scratch: bool = False,
    refs: dict[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    sandbox: Availability | None = None,
) -> list[GitOutput]:
    """Run several git commands in one view of the repository holding ``directory``, until one fails.

    As :func:`~nestor.tools.git.runner.run_git_async`, with ``writable`` folders of nestor's own,
    the view's own index and objects when ``scratch``, and ``refs`` (branch name to id) in the view.

    Raises:
        CopyError: No repository or no git, or a command could not run or did not finish in time.

    """
    prepared = prepare_repository(directory)
    if prepared is None:
        raise CopyError(f"no git repository at {directory}, or no git program", hint="install git")
    git, repository = prepared
    availability = sandbox or await detect()
    outputs: list[GitOutput] = []
    with private_view(repository, scratch=scratch, refs=refs) as (view, git_env):
        shown = (repository.work_tree, repository.git_dir, repository.common_dir, view, *writable)
        own = (view, *writable) if scratch else writable
        for args in steps:
            argv = [git, "-C", str(directory), *args]
            launch = sandboxed_launch(availability, repository.work_tree, shown, argv, own_dirs=own)
            if launch is None:
                raise CopyError("git cannot run in the sandbox", hint="see `nestor doctor`")
            done = await run_launch(launch, directory, git_environment(git_env, launch.env), timeout, None)
            if done is None:
                raise CopyError(f"git {args[0]} did not finish in {timeout:g} s in {directory}")
            outputs.append(done)
            if not done.ok:
                break
    return outputs


async def _own_git(
    args: Sequence[str],
    root: Path,
    policy: SandboxPolicy,
    *,
    visible: tuple[Path, ...] = (),
    user_config: bool = False,
) -> None:
    """Run git on a repository nestor made (or makes), in the sandbox ``policy`` rooted at ``root``."""
    git = find_program("git", outside=root)
    if git is None:
        raise CopyError("git is not installed", hint="install git")
    availability = await detect()
    git_home = await asyncio.to_thread(lambda: Path(git).resolve().parent)
    try:
        launch = sandboxed(
            availability.backend,
            policy,
            root,
            [git, *args],
            landlock_abi=availability.landlock_abi,
            visible=(*visible, root, git_home),
        )
    except SandboxError as error:
        raise CopyError(f"git cannot run in the sandbox: {error}") from error
    env = git_environment({} if user_config else _OWN_CONFIG, launch.env)
    done = await run_launch(launch, root, env, COPY_TIMEOUT_S, None)
    if done is None:
        raise CopyError(f"git {args[0]} did not finish in {COPY_TIMEOUT_S:g} s")
    _check(done, f"git {' '.join(args[:3])}")


def _check(done: GitOutput, doing: str) -> None:
    if not done.ok:
        reason = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise CopyError(f"{doing} failed: {reason[-1] if reason else f'git exited with {done.returncode}'}")
