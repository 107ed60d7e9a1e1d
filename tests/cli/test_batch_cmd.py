"""``nestor batch`` end to end: the real command line, real checkouts, a scripted loopback model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerUsage
from tests.cli.batch_support import MODEL, USAGE, read_results, steps, write_jobs
from tests.cli.support import clean_env, git_repo, imports_of_commands, nestor, openai_env

BATCH = ["batch", "--yolo", "--model", MODEL, "--quiet"]


def run_batch(
    tmp_path: Path, jobs: list[dict[str, Any]], *flags: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``jobs`` with ``nestor batch FLAGS`` against the scripted server; what it printed, its results."""
    results = tmp_path / "results.jsonl"
    jobs_file = write_jobs(tmp_path / "jobs.jsonl", jobs)
    with ScriptedOpenAIServer(steps()) as server:
        done = nestor(
            [*BATCH, str(jobs_file), "-o", str(results), *flags],
            cwd=tmp_path,
            env=openai_env(tmp_path, server),
            timeout=120,
        )
    return done, read_results(results) if results.exists() else []


def start(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nestor", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for_lines(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {count} lines")


def test_twelve_jobs_on_three_workers_end_each_as_they_should(tmp_path: Path) -> None:
    api = git_repo(tmp_path / "api", {"README.md": "# api\n", "a.txt": "a\n"})
    git_repo(tmp_path / "web", {"README.md": "# web\n"})
    (tmp_path / "not-a-repo").mkdir()
    jobs = [
        *({"id": f"api-{n}", "repo": "api", "prompt": f"WRITE out{n}.txt api {n}"} for n in range(4)),
        *({"id": f"web-{n}", "repo": "web", "prompt": f"WRITE page{n}.html web {n}"} for n in range(2)),
        {"id": "explore", "repo": "web", "prompt": "WRITE page.html web", "agent": "explore"},
        {"id": "setup", "repo": "web", "prompt": "WRITE b.txt b", "setup": "echo built > built.txt"},
        {"id": "fail-1", "repo": "api", "prompt": "FAIL"},
        {"id": "fail-2", "repo": "web", "prompt": "FAIL"},
        {"id": "budget", "repo": "api", "prompt": "LOOP", "budget": {"max_iterations": 2}},
        {"id": "bad-repo", "repo": "not-a-repo", "prompt": "WRITE x.txt x"},
    ]
    results = tmp_path / "out" / "results.jsonl"
    with ScriptedOpenAIServer(steps()) as server:
        env = openai_env(tmp_path, server)
        done = nestor(
            [*BATCH, str(write_jobs(tmp_path / "jobs.jsonl", jobs)), "-o", str(results), "--workers", "3"],
            cwd=tmp_path,
            env=env,
            timeout=240,
        )
        assert done.returncode == 1, done.stderr
        records = {record["id"]: record for record in read_results(results)}
        report = nestor(
            ["batch", "report", str(results), "--export-preds", str(tmp_path / "preds.json")],
            cwd=tmp_path,
            env=env,
        )
        shown = nestor(["sessions", "show", records["api-1"]["session_id"], "--tree"], cwd=tmp_path, env=env)

    assert sorted(records) == sorted(job["id"] for job in jobs)
    statuses = {job_id: record["status"] for job_id, record in records.items()}
    assert sorted(job_id for job_id, status in statuses.items() if status != "done") == [
        "bad-repo",
        "budget",
        "fail-1",
        "fail-2",
    ]
    assert (statuses["fail-1"], statuses["fail-2"], statuses["budget"], statuses["bad-repo"]) == (
        "failed",
        "failed",
        "stopped",
        "error",
    )
    assert records["budget"]["stop_reason"] == "max_iterations"
    assert "not in a git repository" in records["bad-repo"]["error"]
    assert "HTTP 400" in records["fail-1"]["error"]
    assert records["api-2"]["files_changed"] == ["out2.txt"] and "+api 2" in records["api-2"]["patch"]
    assert records["setup"]["files_changed"] == ["b.txt", "built.txt"]
    explore = json.loads(Path(records["explore"]["session_export"]).read_text())["session"]
    assert explore["agent_name"] == "explore" and records["explore"]["files_changed"] == []  # it cannot write
    assert records["api-0"]["tokens"] == 2200 and records["api-0"]["attempts"] == 1
    assert Path(records["api-0"]["session_export"]).is_file()
    assert (
        json.loads(Path(records["api-0"]["session_export"]).read_text())["session"]["id"]
        == records["api-0"]["session_id"]
    )
    assert (api / "a.txt").read_text() == "a\n" and not (api / "out0.txt").exists()  # the source is untouched
    assert report.returncode == 0 and "8 done, 2 failed, 1 stopped, 1 error" in report.stdout
    preds = json.loads((tmp_path / "preds.json").read_text())
    assert {pred["instance_id"] for pred in preds} == set(records)
    assert shown.returncode == 0 and records["api-1"]["session_id"] in shown.stdout


def test_jobs_editing_the_same_file_of_one_repository_never_see_each_other(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"shared.txt": "original\n"})
    jobs = [{"id": f"j{n}", "repo": "repo", "prompt": f"WRITE shared.txt version {n}"} for n in range(2)]
    done, found = run_batch(tmp_path, jobs, "--workers", "2", "--keep")
    assert done.returncode == 0, done.stderr
    records: dict[str, Any] = {record["id"]: record for record in found}
    for n in range(2):
        assert "-original\n+version " + str(n) in records[f"j{n}"]["patch"]
        assert Path(records[f"j{n}"]["checkout"], "shared.txt").read_text() == f"version {n}"
    assert records["j0"]["checkout"] != records["j1"]["checkout"]
    assert (repo / "shared.txt").read_text() == "original\n"


def test_a_job_with_prompts_asks_each_in_turn_in_one_session_and_the_last_answer_is_its(
    tmp_path: Path,
) -> None:
    git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    jobs = [
        {"id": "two", "repo": "repo", "prompts": ["Where is the readme?", "And what does it say?"]},
        {"id": "one", "repo": "repo", "prompt": "Where is the readme?"},
    ]

    def respond(body: dict[str, Any]) -> ServerReply:
        if not body.get("tools"):
            return ServerReply(text="A session title", usage=ServerUsage(10, 3))
        asked = [m for m in body["messages"] if m["role"] == "user"]
        return ServerReply(text=f"answer to {json.dumps(asked[-1]['content'])}", usage=USAGE)

    results = tmp_path / "results.jsonl"
    with ScriptedOpenAIServer([respond] * 50) as server:
        done = nestor(
            [*BATCH, str(write_jobs(tmp_path / "jobs.jsonl", jobs)), "-o", str(results)],
            cwd=tmp_path,
            env=openai_env(tmp_path, server),
            timeout=120,
        )
        asked = [json.dumps(body["messages"]) for body in server.requests if body.get("tools")]

    assert done.returncode == 0, done.stderr
    records = {record["id"]: record for record in read_results(results)}
    two = records["two"]
    assert "And what does it say?" in two["answer"] and two["status"] == "done"
    assert two["num_turns"] == 2 and two["usage"]["input_tokens"] == 2 * USAGE.prompt_tokens
    assert records["one"]["usage"]["input_tokens"] == USAGE.prompt_tokens
    # The second prompt was asked in the first one's session: its request holds the first exchange.
    [follow_up] = [text for text in asked if "And what does it say?" in text]
    assert "Where is the readme?" in follow_up and "answer to" in follow_up
    session = json.loads(Path(two["session_export"]).read_text())
    assert session["session"]["id"] == two["session_id"]


def test_a_killed_batch_keeps_every_finished_job_and_a_second_run_does_the_rest(tmp_path: Path) -> None:
    git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    jobs = [{"id": f"slow-{n}", "repo": "repo", "prompt": "SLOW 0.6"} for n in range(8)]
    jobs_file = write_jobs(tmp_path / "jobs.jsonl", jobs)
    results = tmp_path / "results.jsonl"
    with ScriptedOpenAIServer(steps()) as server:
        env = openai_env(tmp_path, server)
        batch = start([*BATCH, str(jobs_file), "-o", str(results), "--workers", "2"], tmp_path, env)
        try:
            wait_for_lines(results, 3)
        finally:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.communicate()
        kept = read_results(results)  # every line whole: json.loads would raise on a torn one
        assert results.read_bytes().endswith(b"\n") and len(kept) >= 3
        again = nestor(
            [*BATCH, str(jobs_file), "-o", str(results), "--workers", "2"], cwd=tmp_path, env=env, timeout=120
        )

    assert again.returncode == 0, again.stderr
    assert f"{len(kept)} jobs already in" in again.stderr
    final = read_results(results)
    assert final[: len(kept)] == kept
    assert sorted(record["id"] for record in final) == sorted(job["id"] for job in jobs)


def test_the_batch_budget_starts_no_job_once_spent_and_stops_the_running_one(tmp_path: Path) -> None:
    git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    jobs = [{"id": f"j{n}", "repo": "repo", "prompt": "LOOP"} for n in range(4)]
    done, records = run_batch(tmp_path, jobs, "--workers", "1", "--max-cost-usd", "0.01")
    assert done.returncode == 1
    assert [record["id"] for record in records] == ["j0"]
    assert records[0]["status"] == "stopped" and records[0]["stop_reason"] == "token_budget"
    assert "budget (--max-cost-usd) is spent" in done.stderr


def test_ctrl_c_cancels_the_running_jobs_and_records_them(tmp_path: Path) -> None:
    git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    jobs = [{"id": f"j{n}", "repo": "repo", "prompt": "SLOW 30"} for n in range(3)]
    results = tmp_path / "results.jsonl"
    with ScriptedOpenAIServer(steps()) as server:
        env = openai_env(tmp_path, server)
        batch = start(
            [*BATCH, str(write_jobs(tmp_path / "jobs.jsonl", jobs)), "-o", str(results), "--workers", "2"],
            tmp_path,
            env,
        )
        deadline = time.monotonic() + 30
        while (
            len([body for body in server.requests if body.get("tools")]) < 2 and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        batch.send_signal(signal.SIGINT)
        _, stderr = batch.communicate(timeout=60)
    records = read_results(results)
    assert batch.returncode == 130, stderr
    assert sorted((record["id"], record["status"]) for record in records) == [
        ("j0", "cancelled"),
        ("j1", "cancelled"),
    ]


def test_a_jobs_file_with_bad_lines_names_each_and_starts_nothing(tmp_path: Path) -> None:
    git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    lines = [
        json.dumps({"id": "ok", "repo": "repo", "prompt": "hi"}),
        "{not json",
        json.dumps({"id": "no-prompt", "repo": "repo"}),
        json.dumps({"id": "ok", "repo": "repo", "prompt": "again"}),
        json.dumps({"id": "gone", "repo": "missing", "prompt": "hi"}),
        json.dumps({"id": "typo", "repo": "repo", "prompt": "hi", "budegt": {}}),
        json.dumps({"id": "cost", "repo": "repo", "prompt": "hi", "budget": {"max_cost_usd": -1}}),
        json.dumps({"id": "both", "repo": "repo", "prompt": "hi", "prompts": ["hi", "then"]}),
        json.dumps({"id": "none", "repo": "repo", "prompts": []}),
    ]
    (tmp_path / "jobs.jsonl").write_text("\n".join(lines) + "\n")
    done = nestor(
        ["batch", "jobs.jsonl", "-o", "results.jsonl"],
        cwd=tmp_path,
        env=clean_env(tmp_path / "home"),
    )

    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "has 8 bad lines; no job started" in done.stderr
    for expected in (
        "line 2: not JSON",
        "line 3: 'prompt' is missing",
        "line 4: id 'ok' is already the id of line 1",
        "line 5: repo 'missing' is neither a folder nor a git URL",
        "line 6: 'budegt' is not a job field",
        "line 7: 'budget.max_cost_usd'",
        "line 8: give 'prompt' or 'prompts' (a list asked in turn), not both",
        "line 9: 'prompts'",
    ):
        assert expected in done.stderr
    assert not (tmp_path / "results.jsonl").exists()


def test_a_batch_on_this_machine_imports_no_ray(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    write_jobs(tmp_path / "repo" / "jobs.jsonl", [{"id": "one", "repo": ".", "prompt": "hi"}])
    jobs, results = str(tmp_path / "repo" / "jobs.jsonl"), str(tmp_path / "results.jsonl")

    found = imports_of_commands(
        tmp_path, {"batch": ["batch", jobs, "-o", results, "-q", "--model", MODEL]}, ["ray"]
    )

    assert found == {"codes": {"batch": 0}, "imported": []}
    assert [record["status"] for record in read_results(Path(results))] == ["done"]
