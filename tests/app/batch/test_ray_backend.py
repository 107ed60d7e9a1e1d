"""``nestor batch --ray`` on a Ray cluster the test starts: two raylets here, one lost mid-batch."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster

from nestor.app.batch.ray_backend import provider_environment
from nestor.testing import ScriptedOpenAIServer
from tests.cli.batch_support import MODEL, read_results, steps, write_jobs
from tests.cli.support import clean_env, git_repo, nestor, openai_env


def running_jobs(server: ScriptedOpenAIServer) -> int:
    """How many jobs asked the model their first question (a title's request offers no tools)."""
    return len([body for body in server.requests if body.get("tools")])


@pytest.mark.timeout(300)
def test_a_lost_node_s_jobs_are_retried_on_the_other_and_their_sessions_come_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    jobs = [{"id": f"j{n}", "repo": "repo", "prompt": "SLOW 4"} for n in range(3)]
    results = tmp_path / "results.jsonl"
    for name, value in clean_env(tmp_path / "worker-home").items():  # what the raylets' workers inherit
        monkeypatch.setenv(name, value)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        lost = cluster.add_node(num_cpus=2)
        cluster.wait_for_nodes()
        with ScriptedOpenAIServer(steps()) as server:
            env = openai_env(tmp_path, server)
            args = ["batch", "--model", MODEL, "-q", "--ray", cluster.address, "--workers", "3"]
            batch = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "nestor",
                    *args,
                    str(write_jobs(tmp_path / "jobs.jsonl", jobs)),
                    "-o",
                    str(results),
                ],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.monotonic() + 120
            while running_jobs(server) < 3 and time.monotonic() < deadline and batch.poll() is None:
                time.sleep(0.1)
            assert running_jobs(server) == 3, (
                batch.communicate()[1] if batch.poll() is not None else "no 3 jobs"
            )
            cluster.remove_node(lost, allow_graceful=False)
            _, stderr = batch.communicate(timeout=200)
            records = {record["id"]: record for record in read_results(results)}
            shown = nestor(["sessions", "show", records["j0"]["session_id"], "--tree"], cwd=tmp_path, env=env)
    finally:
        cluster.shutdown()

    assert batch.returncode == 0, stderr
    assert {record["status"] for record in records.values()} == {"done"}
    assert sorted(record["attempts"] for record in records.values()) == [1, 2, 2]
    assert shown.returncode == 0 and records["j0"]["session_id"] in shown.stdout, shown.stderr


def test_workers_get_the_provider_variables_and_nothing_else() -> None:
    driver = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://h/v1", "HOME": "/home/me", "AWS_SECRET": "x"}

    assert provider_environment(driver) == {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://h/v1"}
