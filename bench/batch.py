"""``nestor batch``: 40 jobs whose one model request takes 1 s, on 1, 4 and 16 workers, here and on Ray.

Each run is the real command line (``nestor batch JOBS -o RESULTS --quiet``) in a process of its
own, against a scripted OpenAI-compatible server on 127.0.0.1 whose job requests answer after
1 s (a session's title answers at once). Every job is a real one: a clone of the repository's
bundle in a temp dir of its own, the agent tree of ``nestor run`` on a session store, the patch
read, the session exported, the result line appended with an fsync.

The ideal wall time with N workers is ceil(40 / N) requests of 1 s one after the other: 40 s,
10 s, 3 s. The ratio (wall / ideal) is what nestor's own work costs on top: the process's start,
each job's checkout, its agent's build and its bookkeeping, which N workers share this machine's
cores for. Through Ray (``--ray ADDRESS``, a cluster of one raylet this bench starts, 16 logical
CPUs, ``--job-cpus 1``) each run adds Ray's task dispatch, the bundle's trip through the object
store and a worker process per job running at once (started on first use and kept by Ray).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerUsage, first_user_text

JOBS = 40
LATENCY_S = 1.0
WORKERS = (1, 4, 16)
MODEL = "openai-chat:gpt-4o"


def answer(body: dict[str, Any]) -> ServerReply:
    """A job's request answers after LATENCY_S; anything else (a title) at once."""
    if first_user_text(body).startswith("JOB"):
        return ServerReply(text="done", usage=ServerUsage(1000, 100), delay=LATENCY_S)
    return ServerReply(text="A title", usage=ServerUsage(10, 3))


def make_repo(path: Path) -> Path:
    """A small git repository (20 files) the jobs check out."""
    path.mkdir()
    for n in range(20):
        (path / f"module_{n}.py").write_text(f"def f{n}():\n    return {n}\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "i"],
    ):
        subprocess.run(["git", *args], cwd=path, env=env, check=True)
    return path


def environment(home: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    """A private home and data dir, the scripted server as the openai provider, no other key."""
    kept = {key: value for key, value in os.environ.items() if not key.endswith(("_API_KEY", "_BASE_URL"))}
    kept.pop("NESTOR_HOME", None)
    return kept | {
        "NESTOR_WARM": "0",  # each run in its own process, no warm server started or used
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "bench",
    }


def run_batch(folder: Path, env: dict[str, str], workers: int, ray: str | None) -> float:
    """One batch of JOBS jobs; its wall time (every job must end done)."""
    results = folder / f"results-{workers}-{'ray' if ray else 'local'}.jsonl"
    args = ["batch", str(folder / "jobs.jsonl"), "-o", str(results), "--quiet", "--model", MODEL]
    args += ["--workers", str(workers)] + (["--ray", ray] if ray else [])
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nestor", *args], cwd=folder, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    statuses = (
        [json.loads(line)["status"] for line in results.read_text().splitlines()] if results.exists() else []
    )
    if done.returncode != 0 or statuses.count("done") != JOBS:
        raise SystemExit(f"the batch failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    """Print the wall times and their ratios to the ideal, locally and through Ray."""
    print(f"nestor batch: {JOBS} jobs, one {LATENCY_S:g} s model request each (ratio = wall / ideal)")
    with tempfile.TemporaryDirectory(prefix="nestor-bench-batch-") as temp:
        folder = Path(temp)
        make_repo(folder / "repo")
        lines = [
            json.dumps({"id": f"job-{n:02d}", "repo": "repo", "prompt": f"JOB {n}"}) for n in range(JOBS)
        ]
        (folder / "jobs.jsonl").write_text("\n".join(lines) + "\n")
        with ScriptedOpenAIServer([answer] * (JOBS * 4 * len(WORKERS) * 2)) as server:
            env = environment(folder / "home", server)
            for workers in WORKERS:
                report("local", workers, run_batch(folder, env, workers, None))
            try:
                from ray.cluster_utils import Cluster
            except ImportError:
                print("  Ray: not installed (pip install 'nestor[ray]')")
                return
            saved = dict(os.environ)
            os.environ.update(env)  # what the raylet's workers inherit: the bench's private home
            cluster = Cluster(
                initialize_head=True, head_node_args={"num_cpus": 16, "include_dashboard": False}
            )
            try:
                for workers in WORKERS:
                    report("Ray  ", workers, run_batch(folder, env, workers, cluster.address))
            finally:
                cluster.shutdown()
                os.environ.clear()
                os.environ.update(saved)


def report(where: str, workers: int, elapsed: float) -> None:
    """One line: where, how many workers, the wall time, the ideal and their ratio."""
    ideal = math.ceil(JOBS / workers) * LATENCY_S
    print(f"  {where} {workers:>2} workers: {elapsed:6.1f} s, ideal {ideal:4.0f} s, {elapsed / ideal:.2f}x")


if __name__ == "__main__":
    main()
