"""The eval runner end to end: real tasks files, real workspaces, the real nestor harness (through
``nestor batch``) and CLI, and a scripted OpenAI-compatible server on loopback in place of the model.

The rows a scripted run gives are those the old path (``nestor run`` per task, before issue 36)
gave to the value: what changed is how nestor runs the tasks, not how they are judged."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evals.cli import main, run_and_report
from evals.harnesses.base import EvalContext, HarnessResult
from evals.harnesses.nestor import NestorHarness
from evals.runner import BatchOptions, run_task, run_through_batch, select_tasks, with_time_limit
from evals.tasks import Task, load_tasks
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.evals.support import scripted_model, served_nestor


def test_smoke_run_solves_a_question_and_an_edit_and_writes_rows_and_totals(
    suite: tuple[Path, Path], context: EvalContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks_dir, repos_dir = suite
    tasks = load_tasks(tasks_dir, repos_dir)
    json_path = tmp_path / "results" / "run.json"
    with ScriptedOpenAIServer([scripted_model("add(2, 3) returns 5.")] * 20) as server:
        code = run_and_report(
            tasks, [served_nestor(server)], context, json_path=json_path, repos_dir=repos_dir
        )
    out = capsys.readouterr().out

    assert code == 0
    lines = out.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")] == [
        *("task", "kind", "harness", "solved", "seconds", "tokens in/out", "first failure")
    ]
    assert [line.split("|")[3].strip() for line in lines[1:3]] == ["yes", "yes"]
    assert "100/7" in lines[1] and "200/14" in lines[2]
    assert "| nestor | 2/2 | 100% |" in out

    report = json.loads(json_path.read_text())
    assert [(row["task_id"], row["solved"], row["failures"]) for row in report["rows"]] == [
        ("calc-lookup", True, []),
        ("calc-fix", True, []),
    ]
    assert report["rows"][0]["answer"] == "add(2, 3) returns 5."
    assert report["rows"][1]["input_tokens"] == 200 and report["rows"][1]["output_tokens"] == 14
    [totals] = report["totals"]
    assert totals["harness"] == "nestor" and totals["solved"] == 2 and totals["total"] == 2
    assert totals["question_median_s"] > 0 and totals["edit_median_s"] > 0
    assert totals["input_tokens"] == 300
    assert "| nestor | 2/2 | 100% |" in report["markdown"]
    assert report["threads"] == 1 and report["model"] == {"file": "unused.gguf", "size": 4, "sha256": None}
    assert report["interrupted"] is False and report["nestor"]["commit"]

    # nestor ran the tasks as one batch, whose files are kept beside the JSON: its log is the
    # job's session export.
    log = Path(report["rows"][1]["log"])
    assert log == tmp_path / "results" / "run.batch" / "results.jsonl.sessions" / "calc-fix.json"
    assert "Fixed: add adds again." in log.read_text()
    jobs = [json.loads(line) for line in (tmp_path / "results" / "run.batch" / "jobs.jsonl").open()]
    assert [(job["id"], job["prompts"], job["budget"]) for job in jobs] == [
        ("calc-lookup", ["What does add(2, 3) return?"], {"max_time_s": 60.0}),
        ("calc-fix", ["Fix add so that test_calc.py passes."], {"max_time_s": 60.0}),
    ]
    # The workspaces lived in temporary directories, gone once checked.
    assert report["rows"][0]["workspace"] is None


def test_a_wrong_answer_is_reported_unsolved_with_the_failed_check(
    suite: tuple[Path, Path], context: EvalContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks_dir, repos_dir = suite
    tasks = select_tasks(load_tasks(tasks_dir, repos_dir), ["lookup"])
    json_path = tmp_path / "run.json"
    with ScriptedOpenAIServer([scripted_model("It returns 6.")] * 10) as server:
        code = run_and_report(
            tasks, [served_nestor(server)], context, json_path=json_path, repos_dir=repos_dir
        )
    out = capsys.readouterr().out

    assert code == 0
    [row] = json.loads(json_path.read_text())["rows"]
    assert row["solved"] is False
    assert row["failures"] == [r"answer lacks /\b5\b/", r"answer matches /\b6\b/"]
    assert r"| no     |" in out and r"answer lacks /\b5\b/" in out
    assert "| nestor | 0/1 | 0% |" in out


def test_a_follow_up_is_asked_in_the_same_nestor_session_and_the_last_answer_counts(
    suite: tuple[Path, Path], context: EvalContext, tmp_path: Path
) -> None:
    tasks_dir, repos_dir = suite
    [lookup] = select_tasks(load_tasks(tasks_dir, repos_dir), ["lookup"])
    task = dataclasses.replace(lookup, prompt="Where is add?", followups=("And what does add(2, 3) return?",))
    seen: list[list[dict[str, Any]]] = []

    def respond(request: dict[str, Any]) -> ServerReply:
        if not request.get("tools"):
            return ServerReply(text="Calc")
        seen.append(request["messages"])
        users = [m for m in request["messages"] if m["role"] == "user"]
        return ServerReply(text="In calc.py." if len(users) == 1 else "It returns 5.")

    with ScriptedOpenAIServer([respond] * 20) as server:
        nestor = served_nestor(server)
        nestor.prepare(context)
        [row] = run_through_batch([task], nestor, BatchOptions(), repos_dir=repos_dir)

    assert row.solved, row.failures
    assert row.answer == "It returns 5."
    second = json.dumps(seen[-1])
    assert "Where is add?" in second and "In calc.py." in second  # the first exchange, continued


class Recorder:
    """A harness that keeps no session: it records each prompt and answers in turn."""

    name = "recorder"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def prepare(self, context: EvalContext) -> None:
        del context

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        self.prompts.append(task.prompt)
        return HarnessResult(answer=f"answer {len(self.prompts)}: 5", seconds=1.5, input_tokens=10)

    def close(self) -> None:
        pass


def test_a_harness_without_sessions_gets_each_follow_up_with_the_exchange_before_it(
    suite: tuple[Path, Path],
) -> None:
    tasks_dir, repos_dir = suite
    [lookup] = select_tasks(load_tasks(tasks_dir, repos_dir), ["lookup"])
    task = dataclasses.replace(lookup, prompt="Where is add?", followups=("What does it return?",))
    harness = Recorder()

    row = run_task(task, harness, repos_dir=repos_dir)

    assert harness.prompts == [
        "Where is add?",
        "Earlier I asked: Where is add?\nYou answered: answer 1: 5\n\nNow: What does it return?",
    ]
    assert row.answer == "answer 2: 5" and row.seconds == 3.0 and row.input_tokens == 20 and row.solved


def test_the_same_json_again_keeps_the_peer_rows_it_has_and_runs_the_rest(
    suite: tuple[Path, Path], context: EvalContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks_dir, repos_dir = suite
    tasks = load_tasks(tasks_dir, repos_dir)
    json_path = tmp_path / "run.json"
    first = Recorder()
    assert run_and_report(tasks[:1], [first], context, json_path=json_path, repos_dir=repos_dir) == 0

    # A longer run on the same results: the task measured before is not asked again.
    second = Recorder()
    assert run_and_report(tasks, [second], context, json_path=json_path, repos_dir=repos_dir) == 0
    assert len(first.prompts) == 1 and second.prompts == [tasks[1].prompt]
    rows = json.loads(json_path.read_text())["rows"]
    assert [(row["task_id"], row["answer"]) for row in rows] == [
        (tasks[0].id, "answer 1: 5"),
        (tasks[1].id, "answer 1: 5"),
    ]
    assert "| recorder | " in capsys.readouterr().out

    # --redo asks everything again.
    third = Recorder()
    assert run_and_report(tasks, [third], context, json_path=json_path, repos_dir=repos_dir, redo=True) == 0
    assert third.prompts == [task.prompt for task in tasks]


def test_a_time_limit_lowers_every_task_s_own_and_never_raises_one(suite: tuple[Path, Path]) -> None:
    tasks = load_tasks(*suite)
    short = dataclasses.replace(tasks[0], timeout_s=30.0)
    limited = with_time_limit([short, tasks[1]], 45)
    assert [task.timeout_s for task in limited] == [30.0, 45.0]
    assert [task.id for task in limited] == [short.id, tasks[1].id]


def test_a_harness_that_cannot_be_prepared_ends_the_run_with_one_line(
    suite: tuple[Path, Path], context: EvalContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks_dir, repos_dir = suite
    harness = NestorHarness(python=str(tmp_path / "no-such-python"))
    code = run_and_report(
        load_tasks(tasks_dir, repos_dir),
        [harness],
        context,
        json_path=tmp_path / "run.json",
        repos_dir=repos_dir,
    )
    err = capsys.readouterr().err

    assert code == 1
    [error] = [line for line in err.splitlines() if "error" in line]
    assert (
        error.startswith("python -m evals: error: nestor could not be prepared: ")
        and "no-such-python" in error
    )
    assert "Traceback" not in err


def test_list_prints_the_selected_tasks(suite: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    tasks_dir, repos_dir = suite
    assert main(["--list", "--kind", "fix"], tasks_dir=tasks_dir, repos_dir=repos_dir) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.split() == ["calc-fix", "fix", "calc:", "Fix", "add", "so", "that", "test_calc.py", "passes."]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--harness", "nestor,vim"], "unknown harness vim; known: nestor, aider, mini-swe-agent"),
        (["--task", "nothing-like-it"], "no task matches (of 2 in"),
        (["--kind", "poetry"], "invalid choice: 'poetry'"),
        (["--threads", "0"], "expected at least 1, got 0"),
        (["--workers", "0"], "expected at least 1, got 0"),
        (["--time-limit", "0"], "expected at least 1, got 0"),
    ],
)
def test_usage_mistakes_exit_2_with_one_line(
    suite: tuple[Path, Path], capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    tasks_dir, repos_dir = suite
    assert main(argv, tasks_dir=tasks_dir, repos_dir=repos_dir) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith("python -m evals: error: ") and message in line
    assert captured.out == ""


SLEEPING_RUN = """
import sys
from pathlib import Path

from evals.cli import run_and_report, stop_on_termination
from evals.harnesses.base import EvalContext, HarnessResult
from evals.processes import run_in_group
from evals.tasks import load_tasks

tasks_dir, repos_dir, work, pid_file = map(Path, sys.argv[1:])


class Sleeper:
    name = "sleeper"

    def prepare(self, context):
        pass

    def run(self, task, workspace):
        # A harness that starts a child of its own and never finishes.
        run_in_group(f"sleep 300 & echo $! > {pid_file}; wait", cwd=workspace, timeout_s=600)
        return HarnessResult(answer="", seconds=0.0)

    def close(self):
        pass


model = work / "unused.gguf"
model.parent.mkdir(parents=True, exist_ok=True)
model.write_bytes(b"GGUF")
stop_on_termination()
sys.exit(
    run_and_report(
        load_tasks(tasks_dir, repos_dir),
        [Sleeper()],
        EvalContext(model_path=model, work_dir=work, threads=1),
        json_path=work / "run.json",
        repos_dir=repos_dir,
    )
)
"""


def test_a_terminated_run_kills_the_harness_and_writes_what_it_measured(
    suite: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks_dir, repos_dir = suite
    work, pid_file = tmp_path / "work", tmp_path / "sleep.pid"
    script = tmp_path / "run.py"
    script.write_text(SLEEPING_RUN)
    run = subprocess.Popen(
        [sys.executable, str(script), str(tasks_dir), str(repos_dir), str(work), str(pid_file)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        if run.poll() is not None:
            pytest.fail(f"the run ended early: {run.communicate()[1]}")
        time.sleep(0.1)
    sleeper = int(pid_file.read_text())

    run.send_signal(signal.SIGTERM)
    _out, err = run.communicate(timeout=60)

    assert run.returncode == 130, err
    assert "interrupted after 0 rows" in err
    assert json.loads((work / "run.json").read_text())["interrupted"] is True
    # The harness's own child went with its process group: nothing is left running.
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(sleeper, 0)
            time.sleep(0.1)
