"""``nestor batch --ray``: each job a Ray task; the only module of nestor that imports ``ray``.

The driver packs each local repository once (a git bundle at the job's commit) and puts it in
Ray's object store, so a worker needs no shared filesystem; a git URL is cloned on the worker. A
task runs :func:`~nestor.app.batch.job.run_job` in a temp dir of the worker, with a session store
of its own whose tree it sends back as an export (the driver writes and imports it). A task on a
worker that is lost is retried by Ray (``max_retries``); each try asks an attempt counter (an actor
on the head node) for its number, which the result records. Credentials reach the workers
as the provider variables of the driver's environment only (their keys, their base URLs), as a
task argument: nothing else of the driver's environment is shipped.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.app.batch.checkout import Packer, RepoSource
from nestor.app.batch.job import JobHandle, JobOptions, JobRun, run_job, unstarted_record
from nestor.app.batch.jobs import Job
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.config.settings import Settings
    from nestor.runtime.kernel.hooks import Hook

HEAD_RESOURCE = "node:__internal_head__"
"""The resource only Ray's head node has."""
MAX_RETRIES = 3
"""How many times Ray runs a job again whose worker was lost (a job's own failure is not retried)."""


class RayExecutor:
    """Jobs as Ray tasks on the cluster at ``address`` (``auto``, ``local`` or a cluster's address).

    Args:
        address: ``local`` starts a cluster on this machine; ``auto`` joins ``RAY_ADDRESS`` or a
            running one; anything else is the address :func:`ray.init` is given.
        options: What every job shares (its ``env`` is replaced by the provider variables).
        packer: Packs each local repository once (the bundle then goes to the object store).
        cpus: CPUs each job reserves.
        memory_mb: Memory each job reserves (None: none reserved).
        env: The driver's environment, whose provider variables are shipped.
        settings: The driver's settings (the variables its named providers' keys are in).

    """

    def __init__(
        self,
        address: str,
        options: JobOptions,
        packer: Packer,
        *,
        cpus: float = 1.0,
        memory_mb: int | None = None,
        env: Mapping[str, str] = os.environ,
        settings: Settings | None = None,
    ) -> None:
        self.address = address
        self.options = replace(options, env=provider_environment(env, settings))
        self.packer = packer
        self.cpus = cpus
        self.memory_mb = memory_mb
        self._bundles: dict[Path, Any] = {}
        self._task: Any = None
        self._counter: Any = None

    async def run(self, job: Job, handle: JobHandle, hooks: Callable[[], Sequence[Hook]]) -> JobRun:
        """Run ``job`` as a Ray task and wait for its result; :meth:`JobHandle.stop` cancels the task."""
        try:
            source = await self.packer.source(job)
        except NestorError as error:
            return JobRun(unstarted_record(job, error))
        ray = self._connect()
        bundle = None
        if source.bundle is not None:
            if source.bundle not in self._bundles:
                data = await asyncio.to_thread(source.bundle.read_bytes)
                self._bundles[source.bundle] = ray.put(data)
            bundle = self._bundles[source.bundle]
        if handle.stopped:  # stopped while its repository was packed
            return JobRun(
                {"id": job.id, "repo": job.repo, "ref": job.ref, "status": "cancelled", "attempts": 0}
            )
        fields = {"commit": source.commit, "url": source.url, "ref": source.ref}
        options = {
            "yolo": self.options.yolo,
            "keep": self.options.keep,
            "model": self.options.model,
            "env": dict(self.options.env or {}),
        }
        reference = self._task.remote(job.to_dict(), bundle, fields, options, self._counter)
        handle.on_stop.append(lambda: ray.cancel(reference, force=True))
        try:
            result = await reference
        except Exception as error:  # cancelled, or lost more often than the retries allow
            status = "cancelled" if handle.stopped else "error"
            record = {"id": job.id, "repo": job.repo, "ref": job.ref, "status": status, "stop_reason": status}
            if not handle.stopped:
                record["error"] = f"the Ray task failed: {type(error).__name__}: {str(error)[:500]}"
            return JobRun(record | {"attempts": await self._attempts(job.id)})
        return JobRun(result["record"], result["export"])

    async def _attempts(self, job_id: str) -> int:
        try:
            return await self._counter.count.remote(job_id)
        except Exception:  # the counter is gone with its node
            return 0

    def connect(self) -> int:
        """Join (or start) the cluster; return how many jobs its CPUs hold at once.

        Raises:
            NestorError: Ray is not installed, or the cluster cannot be reached.

        """
        ray = self._connect()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus / self.cpus)) if self.cpus > 0 else max(1, int(cpus))

    def _connect(self) -> Any:
        try:
            import ray
        except ImportError:
            raise NestorError("--ray needs Ray", hint="pip install 'nestor[ray]'") from None
        if self._task is None:
            if not ray.is_initialized():
                address = None if self.address == "local" else self.address
                try:
                    ray.init(
                        address=address,
                        namespace="nestor-batch",
                        log_to_driver=False,
                        configure_logging=False,
                    )
                except Exception as error:  # Ray raises ConnectionError, RuntimeError, ValueError...
                    raise NestorError(
                        f"cannot join the Ray cluster at {self.address}: {str(error).splitlines()[0][:300]}",
                        hint="check the address (`ray status` on the head), or --ray local",
                    ) from None
            memory = {"memory": self.memory_mb * 2**20} if self.memory_mb else {}
            remote: Any = ray.remote  # its overloads do not take the options as a dict
            self._task = remote(num_cpus=self.cpus, max_retries=MAX_RETRIES, **memory)(_run_on_worker)
            # On the head node, whose loss ends the cluster anyway: the counter outlives any worker
            # (the driver's own node may be a worker's, when several raylets share a machine).
            head = {HEAD_RESOURCE: 0.001} if HEAD_RESOURCE in ray.cluster_resources() else {}
            self._counter = remote(num_cpus=0, resources=head)(AttemptCounter).remote()
        return ray


class AttemptCounter:
    """An actor counting each job's tries: a task asks for its number as it starts."""

    def __init__(self) -> None:
        self.tries: dict[str, int] = {}

    def begin(self, job_id: str) -> int:
        """Count one more try of ``job_id``; return its number (1 for the first)."""
        self.tries[job_id] = self.tries.get(job_id, 0) + 1
        return self.tries[job_id]

    def count(self, job_id: str) -> int:
        """How many tries of ``job_id`` began."""
        return self.tries.get(job_id, 0)


def provider_environment(env: Mapping[str, str], settings: Settings | None = None) -> dict[str, str]:
    """The provider variables of ``env``: built-in providers' keys and base URLs, named providers' keys."""
    from nestor.providers.catalogue import BUILTIN_PROVIDERS

    names: set[str] = set()
    for provider in BUILTIN_PROVIDERS.values():
        names.update(provider.key_env_vars)
        if provider.base_url_env:
            names.add(provider.base_url_env)
    if settings is not None:
        names.update(named.api_key_env for named in settings.providers.values() if named.api_key_env)
    return {name: env[name] for name in sorted(names) if name in env}


def _run_on_worker(
    job_data: dict[str, Any],
    bundle: bytes | None,
    source: dict[str, Any],
    options: dict[str, Any],
    counter: Any,
) -> dict[str, Any]:
    """A Ray task: one job in a temp dir of this worker, its own session store; its record and export."""
    import ray

    job = Job.from_dict(job_data)
    try:
        attempt = ray.get(counter.begin.remote(job.id))
    except Exception:  # the counter's node is gone: the job still runs, its tries uncounted
        attempt = 0
    with tempfile.TemporaryDirectory(prefix="nestor-ray-job-") as temp:
        folder = Path(temp)
        bundle_path = None
        if bundle is not None:
            bundle_path = folder / "repo.bundle"
            bundle_path.write_bytes(bundle)
        repo = RepoSource(commit=source["commit"], bundle=bundle_path, url=source["url"], ref=source["ref"])
        job_options = JobOptions(
            options["yolo"], options["keep"], options["model"], data_dir=folder / "data", env=options["env"]
        )
        run = asyncio.run(run_job(job, repo, job_options, JobHandle(job.id)))
    return {"record": {**run.record, "attempts": attempt}, "export": run.export}
