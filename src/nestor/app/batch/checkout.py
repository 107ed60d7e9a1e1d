"""A job's repository: packed once per repository and ref by the driver, cloned once per job.

A local repository is read through nestor's own git (none of its config, hooks or filters run)
into a bundle at the job's commit; each job clones the bundle into a temp dir of its own, so jobs
never see each other's changes and a worker on another machine needs no shared filesystem (on
Ray the bundle travels through the object store). A git URL is cloned where the job runs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from nestor.app.batch.jobs import Job
from nestor.tools.git.copies import CopyError, bundle, clone_bundle, clone_url, resolve_commit

CHECKOUT_NAME = "repo"
"""The work tree's folder inside a job's temp dir."""


@dataclass(frozen=True, slots=True)
class RepoSource:
    """Where a job's checkout comes from.

    Attributes:
        commit: The commit to check out (None for a URL: resolved once cloned).
        bundle: The bundle holding it (a local repository), or None.
        url: The remote to clone (a git URL), or None.
        ref: The ref to check out of ``url`` (None: its default branch).

    """

    commit: str | None = None
    bundle: Path | None = None
    url: str | None = None
    ref: str | None = None


class Packer:
    """Packs each local repository once per ref into ``folder``; a URL needs no packing.

    Args:
        folder: Where the bundles are written (the batch's temp dir).

    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._packed: dict[tuple[str, str | None], asyncio.Task[RepoSource]] = {}

    async def source(self, job: Job) -> RepoSource:
        """The source of ``job``'s checkout, packing its repository the first time it is asked.

        Raises:
            CopyError: The folder is no repository, has no such ref, or git failed.

        """
        if job.is_url:
            return RepoSource(url=job.repo, ref=job.ref)
        key = (job.repo, job.ref)
        if key not in self._packed:
            self._packed[key] = asyncio.ensure_future(self._pack(Path(job.repo), job.ref, len(self._packed)))
        return await asyncio.shield(self._packed[key])

    async def _pack(self, repo: Path, ref: str | None, number: int) -> RepoSource:
        commit = await resolve_commit(repo, ref)
        self.folder.mkdir(parents=True, exist_ok=True)
        output = self.folder / f"{number}.bundle"
        await bundle(repo, commit, output)
        return RepoSource(commit=commit, bundle=output)


async def make_checkout(source: RepoSource, folder: Path) -> tuple[Path, str]:
    """Clone ``source`` into ``folder``/repo; return the work tree and the commit checked out.

    Raises:
        CopyError: git failed (a URL that cannot be reached, a ref it does not have).

    """
    work_tree = folder / CHECKOUT_NAME
    if source.url is not None:
        return work_tree, await clone_url(source.url, source.ref, work_tree)
    if source.bundle is None or source.commit is None:
        raise CopyError("a job's source names neither a bundle nor a URL")
    await clone_bundle(source.bundle, source.commit, work_tree)
    return work_tree, source.commit
