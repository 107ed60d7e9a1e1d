"""nestor's tasks through ``nestor batch``: the jobs file, each job's result, and its grading.

Each task is one job on a repository prepared as :func:`~evals.workspace.prepare_workspace`
prepares a workspace. The job checks out ``refs/eval/baseline`` (the commit of what the harness
is given, uncommitted edits included); its setup command (:data:`JOB_SETUP`) puts ``HEAD`` back on
``main`` at the last real commit and unstages the rest, so the agent finds the very state of a
workspace, and the job's patch (against its base commit) is exactly what the agent changed. A
follow-up task's prompts are the job's ``prompts``, asked in turn in one session.

The batch removes its checkouts, so a result is graded on a fresh workspace with the job's patch
applied: the task's check reads the files and runs the tests there, as on the old path. Each grade
is appended to a file beside the results, keyed by the job's run, so a resumed eval grades only
the jobs that ran since.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.checks import CheckOutcome, check_outcome
from evals.harnesses.base import HarnessResult
from evals.report import Row, row_from_dict
from evals.tasks import Task
from evals.workspace import BASELINE_REF, prepare_workspace
from nestor.app.batch.results import ResultsFile, latest, read_records

JOB_SETUP = "git branch -f main HEAD~1 && git symbolic-ref HEAD refs/heads/main && git reset -q"
"""A job's setup: ``HEAD`` on ``main`` at the commit before the baseline snapshot, the snapshot's
changes over it left unstaged in the work tree (new files untracked), as in a workspace."""

ENDED = frozenset({"done", "stopped"})
"""Statuses of a job whose answer counts: it answered, or a budget (the task's time) stopped it."""


@dataclass(frozen=True, slots=True)
class BatchFiles:
    """The files of one eval run's batch, in a folder beside its JSON (kept for resuming it).

    Attributes:
        folder: The folder: ``jobs.jsonl``, ``results.jsonl`` (and its ``.sessions/``), ``grades.jsonl``.

    """

    folder: Path

    @classmethod
    def beside(cls, json_path: Path) -> BatchFiles:
        """The batch files of the eval whose JSON is ``json_path``: ``NAME.batch/`` beside it."""
        return cls(json_path.with_name(json_path.stem + ".batch"))

    @property
    def jobs(self) -> Path:
        """The jobs file (written anew by each run)."""
        return self.folder / "jobs.jsonl"

    @property
    def results(self) -> Path:
        """The batch's results file (appended; resumed from)."""
        return self.folder / "results.jsonl"

    @property
    def grades(self) -> Path:
        """The grades of the results, one line per graded job run."""
        return self.folder / "grades.jsonl"


def job_line(task: Task, repository: Path) -> dict[str, Any]:
    """The jobs-file line of ``task``, whose repository was prepared at ``repository``."""
    return {
        "id": task.id,
        "repo": str(repository),
        "ref": BASELINE_REF,
        "prompts": list(task.prompts),
        "budget": {"max_time_s": task.timeout_s},
        "setup": JOB_SETUP,
    }


def write_jobs(tasks: Sequence[Task], jobs: Path, repos_root: Path, repos_dir: Path) -> dict[str, str]:
    """Prepare each task's repository under ``repos_root`` and write the jobs file ``jobs``.

    Returns:
        The tasks whose repository could not be prepared (no job for them), with why.

    """
    lines: list[str] = []
    unprepared: dict[str, str] = {}
    for task in tasks:
        parent = repos_root / task.id
        parent.mkdir(parents=True)
        try:
            repository = prepare_workspace(task, parent, repos_dir)
        except (ValueError, OSError, subprocess.CalledProcessError) as error:
            unprepared[task.id] = " ".join(str(error).split()) or type(error).__name__
            continue
        lines.append(json.dumps(job_line(task, repository)) + "\n")
    jobs.parent.mkdir(parents=True, exist_ok=True)
    jobs.write_text("".join(lines), encoding="utf-8")
    return unprepared


def latest_results(results: Path) -> dict[str, dict[str, Any]]:
    """Each job's last result, by id, leaving out the cancelled ones (a resumed batch runs them again)."""
    return {
        job_id: record
        for job_id, record in latest(read_records(results)).items()
        if record.get("status") != "cancelled"
    }


def harness_result(record: dict[str, Any]) -> HarnessResult:
    """What the harness produced, read from a job's result line."""
    usage: dict[str, Any] = record.get("usage") or {}
    status = record.get("status")
    error = None
    if status not in ENDED:
        error = f"{status}: {record.get('error') or record.get('stop_reason') or 'no reason given'}"
    export = record.get("session_export")
    return HarnessResult(
        answer=str(record.get("answer") or ""),
        seconds=float(record.get("duration_s") or 0.0),
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        error=error,
        log=Path(export) if isinstance(export, str) else None,
    )


def check_result(task: Task, record: dict[str, Any], parent: Path, repos_dir: Path) -> CheckOutcome:
    """Judge a job's answer and patch by the task's check, in a fresh workspace under ``parent``.

    Raises:
        TaskFileError, OSError, subprocess.CalledProcessError: The workspace cannot be prepared.

    """
    workspace = prepare_workspace(task, parent, repos_dir)
    patch = record.get("patch")
    if not isinstance(patch, str):
        why = record.get("patch_error") or "the result has no patch"
        return CheckOutcome(False, (f"what the job changed is unknown: {why}",))
    if patch:
        applied = subprocess.run(
            ["git", "apply", "--binary", "--whitespace=nowarn", "-"],
            cwd=workspace,
            input=patch.encode(),
            capture_output=True,
            check=False,
        )
        if applied.returncode != 0:
            why = " ".join(applied.stderr.decode(errors="replace").split())[:300]
            return CheckOutcome(False, (f"the job's patch does not apply to a fresh workspace: {why}",))
    return check_outcome(task, workspace, str(record.get("answer") or ""))


class Grades:
    """The grades of a batch's results: a row per job run, appended, read back on resume.

    A grade is kept for a job run (its id and start time), so a job run again (``--redo``) is graded
    again.

    Args:
        path: The grades file.

    """

    def __init__(self, path: Path) -> None:
        self._file = ResultsFile(path)
        self._rows = {
            (record["id"], record.get("run")): record["row"]
            for record in read_records(path)
            if isinstance(record.get("row"), dict)
        }

    def get(self, record: dict[str, Any]) -> Row | None:
        """The row already graded for this job run, or None."""
        found = self._rows.get((record["id"], record.get("started_at")))
        if found is None or record.get("started_at") is None:
            return None
        return row_from_dict(found)

    def add(self, record: dict[str, Any], row: Row) -> None:
        """Keep ``row`` as the grade of this job run (only a run that started can be looked up again)."""
        if record.get("started_at") is None:
            return
        fields = dataclasses.asdict(row)
        self._rows[(record["id"], record["started_at"])] = fields
        self._file.append({"id": record["id"], "run": record["started_at"], "row": fields})
