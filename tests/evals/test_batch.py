"""nestor's tasks through ``nestor batch``: graded as on the old path, resumed, redone, and the
job's checkout the very state of a workspace (commits, branch, uncommitted edits)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evals.batch import BatchFiles, check_result
from evals.cli import run_and_report
from evals.harnesses.base import EvalContext, HarnessResult
from evals.runner import BatchOptions, run_through_batch
from evals.tasks import Task, load_tasks
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage
from tests.evals.support import TASKS, make_suite, scripted_model, served_nestor

USAGE = ServerUsage(prompt_tokens=100, completion_tokens=7)


def overreaching_model(request: dict[str, Any]) -> ServerReply:
    """Fixes ``add``, then also writes ``notes.txt``, which the fix task does not allow."""
    if not request.get("tools"):
        return ServerReply(text="Calc")
    done = sum(message["role"] == "tool" for message in request["messages"])
    if done == 0:
        edit = ServerToolCall("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
        return ServerReply(tool_calls=(edit,), usage=USAGE)
    if done == 1:
        note = ServerToolCall("write", {"path": "notes.txt", "content": "fixed add\n"})
        return ServerReply(tool_calls=(note,), usage=USAGE)
    return ServerReply(text="Fixed: add adds again.", usage=USAGE)


class Overreacher:
    """A harness on the old path (a workspace of its own) doing what :func:`overreaching_model` does."""

    name = "overreacher"

    def prepare(self, context: EvalContext) -> None:
        del context

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        calc = workspace / "calc.py"
        calc.write_text(calc.read_text().replace("a - b", "a + b"))
        (workspace / "notes.txt").write_text("fixed add\n")
        return HarnessResult(answer="Fixed: add adds again.", seconds=1.0)

    def close(self) -> None:
        pass


def test_an_edit_outside_the_allowed_files_is_caught_as_on_the_old_path(
    suite: tuple[Path, Path], context: EvalContext, tmp_path: Path
) -> None:
    tasks_dir, repos_dir = suite
    [fix] = [task for task in load_tasks(tasks_dir, repos_dir) if task.id == "calc-fix"]
    json_path = tmp_path / "run.json"
    with ScriptedOpenAIServer([overreaching_model] * 20) as server:
        code = run_and_report(
            [fix], [served_nestor(server), Overreacher()], context, json_path=json_path, repos_dir=repos_dir
        )

    assert code == 0
    rows = {row["harness"]: row for row in json.loads(json_path.read_text())["rows"]}
    assert rows["nestor"]["failures"] == ["changed notes.txt, outside what the request allows"]
    assert rows["nestor"]["solved"] is False
    # The same outcome reached by the old path (a harness in a workspace) is judged the same.
    assert rows["overreacher"]["failures"] == rows["nestor"]["failures"]


def test_a_result_without_a_patch_or_with_one_that_does_not_apply_fails_its_check(
    suite: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks_dir, repos_dir = suite
    [fix] = [task for task in load_tasks(tasks_dir, repos_dir) if task.id == "calc-fix"]
    unknown = check_result(
        fix, {"id": "calc-fix", "patch": None, "patch_error": "git failed"}, tmp_path / "a", repos_dir
    )
    foreign = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-no such line\n+x\n"
    wrong = check_result(fix, {"id": "calc-fix", "patch": foreign, "answer": ""}, tmp_path / "b", repos_dir)

    assert unknown.failures == ("what the job changed is unknown: git failed",)
    assert not wrong.solved and wrong.failures[0].startswith("the job's patch does not apply")


HISTORY = r"""
[[task]]
id = "calc-history"
repo = "calc"
kind = "history"
prompt = "What is the state of the repository?"
timeout_s = 60

[[task.history]]
message = "Make add explicit"
[[task.history.edits]]
file = "calc.py"
old = "return a + b"
new = "return int(a) + int(b)"

[[task.uncommitted]]
file = "calc.py"
old = "int(a)"
new = "float(a)"

[task.check]
answer_all = ['branch: main', 'Make add explicit', '(?m)^ M calc\.py$']
"""


def test_a_job_starts_from_the_workspace_state_commits_branch_and_uncommitted_edits(
    tmp_path: Path, context: EvalContext
) -> None:
    tasks_dir, repos_dir = make_suite(tmp_path / "suite", HISTORY)
    command = "echo branch: $(git branch --show-current); git log --format=%s; git status --short"

    def respond(request: dict[str, Any]) -> ServerReply:
        if not request.get("tools"):
            return ServerReply(text="Calc")
        results = [m for m in request["messages"] if m["role"] == "tool"]
        if not results:
            return ServerReply(tool_calls=(ServerToolCall("bash", {"command": command}),), usage=USAGE)
        return ServerReply(text=str(results[-1]["content"]), usage=USAGE)

    with ScriptedOpenAIServer([respond] * 20) as server:
        nestor = served_nestor(server)
        nestor.prepare(context)
        [row] = run_through_batch(
            load_tasks(tasks_dir, repos_dir), nestor, BatchOptions(), repos_dir=repos_dir
        )

    assert row.solved, (row.failures, row.answer)
    assert "what the harness was given" not in row.answer  # the snapshot is no commit of the branch


SLOW_TASK = r"""
[[task]]
id = "calc-slow"
repo = "calc"
kind = "lookup"
prompt = "How slow is add?"
timeout_s = 60

[task.check]
answer_all = ['\bfast\b']
"""

INTERRUPTED_RUN = """
import sys
from pathlib import Path

from evals.cli import run_and_report, stop_on_termination
from evals.harnesses.base import EvalContext
from evals.harnesses.nestor import NestorHarness
from evals.tasks import load_tasks

tasks_dir, repos_dir, work, json_path = map(Path, sys.argv[1:5])
model = work / "unused.gguf"
model.parent.mkdir(parents=True, exist_ok=True)
model.write_bytes(b"GGUF")
nestor = NestorHarness(
    env={"OPENAI_BASE_URL": sys.argv[5], "OPENAI_API_KEY": "test-key", "NESTOR_MODEL": "openai-chat:gpt-4o"}
)
stop_on_termination()
sys.exit(
    run_and_report(
        load_tasks(tasks_dir, repos_dir),
        [nestor],
        EvalContext(model_path=model, work_dir=work, threads=1),
        json_path=json_path,
        repos_dir=repos_dir,
    )
)
"""


def asked(server: ScriptedOpenAIServer, text: str) -> int:
    """How many of the agents' requests (not titles) the server got for the prompt holding ``text``."""
    return sum(bool(body.get("tools")) and text in json.dumps(body["messages"]) for body in server.requests)


def test_an_interrupted_eval_resumes_grading_only_what_ran_since_and_redo_runs_all_again(
    tmp_path: Path, context: EvalContext
) -> None:
    tasks_dir, repos_dir = make_suite(tmp_path / "suite", TASKS + SLOW_TASK)
    tasks = load_tasks(tasks_dir, repos_dir)
    json_path = tmp_path / "results" / "run.json"
    files = BatchFiles.beside(json_path)
    answers = scripted_model("add(2, 3) returns 5.")
    slowed: list[bool] = []

    def respond(request: dict[str, Any]) -> ServerReply:
        if request.get("tools") and "How slow" in json.dumps(request["messages"]):
            delay = 0.0 if slowed else 60.0  # the first time only: the run is stopped meanwhile
            slowed.append(True)
            return ServerReply(text="It is fast.", usage=USAGE, delay=delay)
        return answers(request)

    script = tmp_path / "run.py"
    script.write_text(INTERRUPTED_RUN)
    with ScriptedOpenAIServer([respond] * 60) as server:
        run = subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(tasks_dir),
                str(repos_dir),
                str(tmp_path / "work"),
                str(json_path),
                server.base_url,
            ],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not slowed and time.monotonic() < deadline:
            if run.poll() is not None:
                pytest.fail(f"the run ended early: {run.communicate()[1]}")
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)
        _out, err = run.communicate(timeout=120)

        first = json.loads(json_path.read_text())
        assert run.returncode == 130, err
        assert "interrupted after 2 rows" in err
        assert first["interrupted"] is True
        assert [(row["task_id"], row["solved"]) for row in first["rows"]] == [
            ("calc-lookup", True),
            ("calc-fix", True),
        ]
        assert [json.loads(line)["status"] for line in files.results.open()] == ["done", "done", "cancelled"]
        lookups = asked(server, "add(2, 3)")

        nestor = served_nestor(server)
        again = run_and_report(tasks, [nestor], context, json_path=json_path, repos_dir=repos_dir)
        resumed = json.loads(json_path.read_text())
        assert asked(server, "add(2, 3)") == lookups  # the tasks done were not asked again
        graded = [json.loads(line)["id"] for line in files.grades.open()]

        redo = BatchOptions(files, redo=True)
        redone = run_and_report(
            tasks, [nestor], context, json_path=json_path, repos_dir=repos_dir, batch=redo
        )
        assert asked(server, "add(2, 3)") > lookups

    assert again == 0 and redone == 0
    assert resumed["interrupted"] is False
    assert [(row["task_id"], row["solved"]) for row in resumed["rows"]] == [
        ("calc-lookup", True),
        ("calc-fix", True),
        ("calc-slow", True),
    ]
    assert resumed["rows"][:2] == first["rows"]  # read back from the grades, not graded again
    assert graded == ["calc-lookup", "calc-fix", "calc-slow"]
    assert len([json.loads(line) for line in files.grades.open()]) == 6  # --redo graded all three again
