"""Start-up of ``nestor run "hi"`` in a project with 20,000 agent files, beside one with none.

A repository can hold any number of agent files (``.claude/agents/*.md``, ``.nestor/agents/*.md``
and the other ecosystems' folders). nestor used to parse every one of them before its first
request, so a repository of 20,000 files held its start for over 20 s; it now reads a project's
agent files within limits (``nestor.agents.file_limits``).

Two projects are built in a temporary folder, neither of them trusted: one with no agent file,
one with :data:`AGENT_FILES` plausible ones (a few KB each: front matter and a prompt) spread over
nestor's, Claude Code's, OpenCode's and Gemini CLI's folders. ``nestor run "hi"`` runs in each,
interleaved, :data:`RUNS` times, against one scripted OpenAI-compatible server on 127.0.0.1.

Side by side, medians: the time from process start to the first request the server receives, the
wall time of the whole run, and its CPU time (user and system: the work itself, which the other
processes of a busy machine do not change); each ratio (many files / none), and whether it is
within 2x.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply

AGENT_FILES = 20_000
RUNS = 9
TARGET_RATIO = 2.0

# Where the files go, with the share of each folder.
_FOLDERS = ((".claude/agents", 8), (".nestor/agents", 4), (".opencode/agents/team", 4), (".gemini/agents", 4))
_AREAS = ("database", "frontend", "security", "build", "api")
_PROMPT = (
    "You are a focused reviewer of {area} changes. Read the diff you are given, then the files it "
    "touches, and report each problem with its file and line, the reason it is wrong and the "
    "smallest fix. Prefer evidence from the code to assumptions; when a test would catch the "
    "problem, name the test to write. Keep the report short: a list, most severe first.\n\n"
)


def agent_text(folder: str, index: int) -> str:
    """A plausible agent file of ``folder``'s ecosystem (about 3 KB)."""
    area = _AREAS[index % len(_AREAS)]
    name = _stem(index)
    description = f"Reviews {area} changes for bugs, risky patterns and missing tests. Use after a change."
    if folder.startswith(".opencode"):
        front = f"description: {description}\nmode: subagent\ntemperature: 0.2\ntools:\n  write: false\n"
    elif folder.startswith(".nestor"):
        front = (
            f"name: {name}\ndescription: {description}\ntools: [view, grep, glob, bash]\nmodel: small\n"
            "max_turns: 20\npermission: { edit: deny, write: deny }\n"
        )
    else:
        front = f"name: {name}\ndescription: {description}\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\n"
    return f"---\n{front}---\n\n" + _PROMPT.format(area=area) * 7


def _stem(index: int) -> str:
    return f"{_AREAS[index % len(_AREAS)]}-reviewer-{index:05d}"


def write_agent_files(project: Path, count: int) -> None:
    """Write ``count`` agent files into ``project``'s agent folders."""
    shares = sum(share for _folder, share in _FOLDERS)
    index = 0
    for number, (folder, share) in enumerate(_FOLDERS):
        directory = project / folder
        directory.mkdir(parents=True, exist_ok=True)
        amount = count - index if number == len(_FOLDERS) - 1 else count * share // shares
        for _ in range(amount):
            (directory / f"{_stem(index)}.md").write_text(agent_text(folder, index), encoding="utf-8")
            index += 1


def _project(root: Path, name: str, files: int) -> Path:
    project = root / name
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    write_agent_files(project, files)
    return project


_FIGURES = ("nestor run -> 1st request", 'nestor run "hi" wall time', "CPU time of the run")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(env: dict[str, str], projects: dict[str, Path]) -> dict[str, list[list[float]]]:
    """Per project, each of :data:`_FIGURES` in seconds for every run, runs interleaved."""
    arrivals: dict[int, float] = {}
    run_number = 0

    def answer(_request: dict[str, Any]) -> ServerReply:
        # Each run sends its prompt, then the new session's title request: only the first counts.
        arrivals.setdefault(run_number, time.time())
        return ServerReply(text="ok")

    samples: dict[str, list[list[float]]] = {name: [[] for _ in _FIGURES] for name in projects}
    with ScriptedOpenAIServer([answer] * (2 * (RUNS + 1) * len(projects))) as server:
        run_env = env | {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        command = [sys.executable, "-m", "nestor", "run", "--model", "openai-chat:gpt-4o", "hi"]
        # One run of each first, not counted: the interpreter's and the file system's caches warm.
        for cwd in projects.values():
            subprocess.run(command, env=run_env, cwd=cwd, check=True, capture_output=True)
        for _ in range(RUNS):
            for name, cwd in projects.items():
                run_number += 1
                cpu, started = _cpu_seconds(), time.time()
                subprocess.run(command, env=run_env, cwd=cwd, check=True, capture_output=True)
                ended = time.time()
                figures = (arrivals[run_number] - started, ended - started, _cpu_seconds() - cpu)
                for series, value in zip(samples[name], figures, strict=True):
                    series.append(value)
    return samples


def main() -> None:
    """Print the figures for both projects, their ratios and the verdict."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env |= {"NESTOR_HOME": str(root / "data"), "HOME": str(root), "XDG_CONFIG_HOME": str(root / "cfg")}
        env["NESTOR_WARM"] = "0"  # each run in its own process, no warm server started or used
        projects = {"none": _project(root, "empty", 0), "many": _project(root, "many", AGENT_FILES)}
        samples = measure(env, projects)
    print(f"Start-up with {AGENT_FILES:,} project agent files (median of {RUNS} interleaved runs)")
    for index, label in enumerate(_FIGURES):
        none = statistics.median(samples["none"][index])
        many = statistics.median(samples["many"][index])
        ratio = many / none
        verdict = "within" if ratio <= TARGET_RATIO else "NOT within"
        print(f"  {label:27} none {none * 1000:7.0f} ms   {AGENT_FILES:,} files {many * 1000:7.0f} ms")
        print(f"    ratio {ratio:.2f}: {verdict} {TARGET_RATIO:g}x")


if __name__ == "__main__":
    main()
