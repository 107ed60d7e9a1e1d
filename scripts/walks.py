"""Count a newcomer's two walks through nestor by running them: the files they visit, the climbs back up.

The walks of ``docs/architecture.md``: a prompt to its answer (``nestor run`` on a scripted
chat-completions server, the model reading one file, then answering) and a ``task`` call to its
report (the main agent delegates to ``general``, which answers; the walk runs from the delegation
guard's check of the call to ``TaskTool.run``'s return). Each runs in a process of its own under a
profiler that sees every Python function nestor calls, not the libraries' own calls:

- a file visited: a module of ``nestor`` one of whose functions runs during the walk;
- a climb back up: a place where a function of a lower layer calls one of a higher layer (the
  layers of ``pyproject.toml``'s contracts, the runtime's four counted as four), counted once per
  calling function and called function: a callable or protocol handed down (a hook, a
  ``ChildBuilder``, a lambda of ``app``).

Usage: ``python scripts/walks.py [--list]``. To count another checkout, put its ``src`` first on
``PYTHONPATH``.
"""

from __future__ import annotations

import dis
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

LAYERS = [
    ("core", "testing"),
    ("providers", "store", "config", "bus.py"),
    ("tools",),
    ("permissions", "agents", "checkpoints"),
    ("runtime/kernel",),
    ("runtime/tree",),
    ("runtime/features",),
    ("runtime/factory",),
    ("app",),
    ("cli", "api.py", "extensions.py", "__main__.py", "__init__.py"),
]
CO_OPTIMIZED = 0x1
CO_COROUTINE = 0x80
SEAMS = (
    # The kernel's protocols, which it calls by design: hooks, tools, the compactor, the harness.
    "before_request",
    "before_tool_call",
    "after_tool_result",
    "before_finish",
    "final_turn",
    "on_run_end",
    "run",
    "description",
    "at_threshold",
    "compact",
    "run_turn",
)
RETURN_VALUE = dis.opmap["RETURN_VALUE"]
RESUME = dis.opmap["RESUME"]


def layer(relative: str) -> int:
    """The layer of a module given by its path under ``nestor/``."""
    for index, names in enumerate(LAYERS):
        if any(relative == name or relative.startswith(name + "/") for name in names):
            return index
    raise ValueError(f"no layer for {relative}")


class Tracer:
    """Records the nestor modules that run and the calls from a lower layer to a higher one."""

    def __init__(self, package: Path, walk: str) -> None:
        self.package = str(package) + os.sep
        self.walk = walk
        self.on = walk == "prompt"
        self.done = False
        self.files: set[str] = set()
        self.climbs: set[tuple[str, str]] = set()

    def relative(self, frame: FrameType | None) -> str | None:
        """The path of ``frame``'s module under ``nestor/``; None outside nestor."""
        if frame is None:
            return None
        name = frame.f_code.co_filename
        return name[len(self.package) :] if name.startswith(self.package) else None

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        """The profiler: a function called or returning."""
        if event not in ("call", "return") or self.done:
            return
        callee = self.relative(frame)
        if callee is None:
            return
        qualname = frame.f_code.co_qualname
        if event == "return":
            if self.walk == "task" and self.on and qualname == "TaskTool.run" and self._returns(frame):
                self.done = True
            return
        if self.walk == "task" and not self.on and qualname == "DelegationGuardHook.before_tool_call":
            self.on = True
        if not self.on or not frame.f_code.co_flags & CO_OPTIMIZED or self._resumed(frame):
            return  # an import (a module's or a class's body), or a coroutine resumed
        self.files.add(callee)
        caller_frame = frame.f_back
        caller = self.relative(caller_frame)
        if caller is not None and caller_frame is not None and layer(caller) < layer(callee):
            self.climbs.add((f"{caller}:{caller_frame.f_code.co_qualname}", f"{callee}:{qualname}"))

    @staticmethod
    def _resumed(frame: FrameType) -> bool:
        """A coroutine or generator going on after an ``await`` or a ``yield``, not a new call.

        Its frame stands at a ``RESUME`` whose argument is not 0 (0: the function's start).
        """
        if not frame.f_code.co_flags & (CO_COROUTINE | 0x20 | 0x200):
            return False
        code, at = frame.f_code.co_code, frame.f_lasti
        return not (code[at] == RESUME and code[at + 1] == 0)

    @staticmethod
    def _returns(frame: FrameType) -> bool:
        """The frame ends (a coroutine's ``return``, not its suspension at an ``await``)."""
        return frame.f_code.co_code[frame.f_lasti] == RETURN_VALUE


def trace(walk: str, output: str) -> None:
    """Run ``nestor run`` in this process under the tracer; write what it saw to ``output``."""
    import threading

    import nestor
    from nestor.cli.entry import main

    tracer = Tracer(Path(nestor.__file__).parent, walk)
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    try:
        code = main(["run", "--yolo", "--model", "openai-chat:gpt-4o", PROMPTS[walk]])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # pyright: ignore[reportArgumentType]
    figures = {"exit": code, "files": sorted(tracer.files), "climbs": sorted(tracer.climbs)}
    Path(output).write_text(json.dumps(figures), encoding="utf-8")


PROMPTS = {"prompt": "what does calc.py do?", "task": "ask a sub-agent what calc.py does"}


def script(walk: str) -> list[Any]:
    """The scripted server's replies for ``walk``."""
    from nestor.testing import ServerReply, ServerToolCall

    if walk == "prompt":
        return [
            ServerReply(tool_calls=(ServerToolCall("view", {"path": "calc.py"}),)),
            ServerReply(text="It adds two numbers."),
        ]
    task = {"description": "read calc.py", "prompt": "What does calc.py do?", "subagent_type": "general"}
    return [
        ServerReply(tool_calls=(ServerToolCall("task", task),)),
        ServerReply(text="calc.py adds two numbers."),
        ServerReply(text="It adds two numbers."),
    ]


def run(walk: str) -> dict[str, Any]:
    """One walk in a process of its own, in a new git repository, on a scripted server."""
    from nestor.testing import ScriptedOpenAIServer

    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer(script(walk)) as server:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        (project / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        home = root / "home"
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.endswith("_API_KEY") and key != "NESTOR_MODEL"
        }
        env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_DATA_HOME=str(home / ".local" / "share"),
            NESTOR_HOME=str(home / "nestor-data"),
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="test-key",
        )
        output = root / "walk.json"
        subprocess.run(
            [sys.executable, __file__, "--trace", walk, str(output)],
            cwd=project,
            env=env,
            check=True,
            timeout=300,
        )
        return json.loads(output.read_text(encoding="utf-8"))


def seam(caller: str, callee: str) -> bool:
    """A call the lower layer makes by design: a hook, a tool or the compactor, or an event's handler."""
    return caller.endswith("EventBus.publish") or callee.rsplit(".", 1)[-1] in SEAMS


def main() -> None:
    """Print both walks' figures (``--list``: and what they visited), or trace one (``--trace``)."""
    if sys.argv[1:2] == ["--trace"]:
        trace(sys.argv[2], sys.argv[3])
        return
    for walk, title in (("prompt", "a prompt to its answer"), ("task", "a task call to its report")):
        figures = run(walk)
        climbs = [(caller, callee) for caller, callee in figures["climbs"] if not seam(caller, callee)]
        seams = len(figures["climbs"]) - len(climbs)
        print(
            f"{title}: {len(figures['files'])} files, {len(climbs)} climbs back up "
            f"(and {seams} calls of a hook, a tool or an event handler by the layer that runs it)"
        )
        if "--list" in sys.argv:
            for name in figures["files"]:
                print(f"  {name}")
            for caller, callee in figures["climbs"]:
                print(f"  {'~' if seam(caller, callee) else '^'} {caller} -> {callee}")


if __name__ == "__main__":
    main()
