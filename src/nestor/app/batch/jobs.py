"""The jobs file of ``nestor batch``: one JSON object per line, each checked before any job starts.

A job is ``{"id", "repo", "ref"?, "prompt", "agent"?, "model"?, "budget"?, "setup"?}``, or has
``"prompts"`` (a list, asked in turn in one session: follow-ups) instead of ``"prompt"``. ``repo`` is
a folder (relative paths are read from the jobs file's folder) or a git URL. Every bad line is
named with its number and what is wrong; a file with one is refused whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from nestor.core.errors import NestorError
from nestor.tools.git.copies import is_git_url

MAX_JOBS_FILE_BYTES = 64 * 1024 * 1024
MAX_SHOWN_PROBLEMS = 20
_ID = re.compile(r"[\w.@:+-]{1,200}")


class JobsFileError(NestorError):
    """The jobs file cannot be read, or some of its lines are not jobs (each is named)."""


class _Budget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_iterations: Annotated[StrictInt, Field(ge=1)] | None = None
    max_tokens: Annotated[StrictInt, Field(ge=0)] | None = None
    max_time_s: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    max_cost_usd: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[StrictStr, Field(pattern=_ID.pattern)]
    repo: Annotated[StrictStr, Field(min_length=1)]
    ref: Annotated[StrictStr, Field(min_length=1, max_length=200)] | None = None
    prompt: Annotated[StrictStr, Field(min_length=1)] | None = None
    prompts: Annotated[list[Annotated[StrictStr, Field(min_length=1)]], Field(min_length=1)] | None = None
    agent: Annotated[StrictStr, Field(min_length=1)] | None = None
    model: Annotated[StrictStr, Field(min_length=1)] | None = None
    budget: _Budget = Field(default_factory=_Budget)
    setup: Annotated[StrictStr, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_way_to_prompt(self) -> _Line:
        if self.prompt is None and self.prompts is None:
            raise ValueError("'prompt' is missing")
        if self.prompt is not None and self.prompts is not None:
            raise ValueError("give 'prompt' or 'prompts' (a list asked in turn), not both")
        return self

    @property
    def all_prompts(self) -> list[str]:
        return [self.prompt] if self.prompt is not None else list(self.prompts or ())


@dataclass(frozen=True, slots=True)
class Budget:
    """A job's own limits (None: the settings' own); the whole agent tree of the job counts."""

    max_iterations: int | None = None
    max_tokens: int | None = None
    max_time_s: float | None = None
    max_cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """One job of a batch, checked.

    Attributes:
        id: Its name in the results (unique in the file).
        repo: The repository: an absolute folder, or a git URL.
        ref: The branch, tag or commit to check out (None: the repository's ``HEAD``).
        prompt: What the agent is asked (first).
        agent: The agent file the main agent is built from (None: ``coder``).
        model: The ``provider:model`` of the main agent (None: the settings' large model).
        budget: The job's own limits.
        setup: A shell command run in the checkout before the agent starts.
        line: Its line in the jobs file.
        followups: What the agent is asked after ``prompt``, in turn, in the same session.

    """

    id: str
    repo: str
    prompt: str
    ref: str | None = None
    agent: str | None = None
    model: str | None = None
    budget: Budget = field(default_factory=Budget)
    setup: str | None = None
    line: int = 0
    followups: tuple[str, ...] = ()

    @property
    def prompts(self) -> tuple[str, ...]:
        """The prompt, then each follow-up, in the order they are asked."""
        return (self.prompt, *self.followups)

    @property
    def is_url(self) -> bool:
        """Whether the repository is a git URL (cloned where the job runs) rather than a folder."""
        return is_git_url(self.repo)

    def to_dict(self) -> dict[str, Any]:
        """The job as plain data (for a Ray task's arguments)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        """The job :meth:`to_dict` gave."""
        followups = tuple(data.get("followups", ()))
        return cls(**{**data, "budget": Budget(**data["budget"]), "followups": followups})


def read_jobs(path: Path) -> list[Job]:
    """Every job of the file at ``path``, in order.

    Raises:
        JobsFileError: The file cannot be read, is empty, or has bad lines (each named by number).

    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_JOBS_FILE_BYTES + 1)
    except OSError as error:
        raise JobsFileError(
            f"cannot read {path}: {error.strerror}", hint="give a JSON Lines jobs file"
        ) from None
    if len(data) > MAX_JOBS_FILE_BYTES:
        raise JobsFileError(f"{path} is larger than {MAX_JOBS_FILE_BYTES // 2**20} MiB", hint="split it")
    jobs: list[Job] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            job = _parse(raw, number, path.parent)
        except ValueError as error:
            problems.append(f"line {number}: {error}")
            continue
        if job.id in seen:
            problems.append(f"line {number}: id {job.id!r} is already the id of line {seen[job.id]}")
            continue
        seen[job.id] = number
        jobs.append(job)
    if problems:
        shown = problems[:MAX_SHOWN_PROBLEMS]
        more = len(problems) - len(shown)
        lines = "\n  ".join(shown + ([f"... and {more} more"] if more else []))
        raise JobsFileError(
            f"{path} has {len(problems)} bad line{'s' * (len(problems) != 1)}; no job started:\n  {lines}",
            hint="fix these lines and run the batch again",
        )
    if not jobs:
        raise JobsFileError(f"{path} holds no job", hint='a JSON object per line: {"id", "repo", "prompt"}')
    return jobs


def _parse(raw: bytes, number: int, base: Path) -> Job:
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    try:
        line = _Line.model_validate(value)
    except ValidationError as error:
        raise ValueError(_first_problem(error)) from None
    repo = line.repo
    if not is_git_url(repo):
        folder = (base / Path(repo).expanduser()).resolve()
        if not folder.is_dir():
            raise ValueError(f"repo {repo!r} is neither a folder nor a git URL")
        repo = str(folder)
    budget = Budget(**line.budget.model_dump())
    first, *followups = line.all_prompts
    return Job(
        line.id, repo, first, line.ref, line.agent, line.model, budget, line.setup, number, tuple(followups)
    )


def _first_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if not where and first["type"] == "value_error":  # a rule over several fields: its own words
        return str(first.get("ctx", {}).get("error", first["msg"]))
    if first["type"] == "missing":
        return f"{where!r} is missing"
    if first["type"] == "extra_forbidden":
        return f"{where!r} is not a job field (id, repo, ref, prompt, prompts, agent, model, budget, setup)"
    return f"{where!r}: {first['msg']}"


def select_jobs(jobs: list[Job], skipped: set[str], *, pattern: str | None, limit: int | None) -> list[Job]:
    """The jobs a run starts: not ``skipped``, their ids matching ``pattern``, the first ``limit``.

    Raises:
        JobsFileError: ``pattern`` is not a regular expression.

    """
    try:
        wanted = re.compile(pattern) if pattern is not None else None
    except re.error as error:
        raise JobsFileError(f"--filter {pattern!r} is not a regular expression: {error}") from None
    chosen = [job for job in jobs if job.id not in skipped and (wanted is None or wanted.search(job.id))]
    return chosen if limit is None else chosen[:limit]
