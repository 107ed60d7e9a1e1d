"""Helpers for ``make install``: show a long pip build as phases and one progress line.

``build_progress.py build LOG -- COMMAND...`` runs COMMAND (a verbose ``pip install`` that builds
llama-cpp-python from source), writes every line of its output to LOG, and shows on the terminal
only the phases (source download, build tools, CMake, compiling, packaging, installing) and the
compiler's ``[n/N]`` steps as one progress line redrawn in place (a line every 10 % when the output
is not a terminal). When COMMAND fails, the last lines of LOG are printed, then LOG's path.

``build_progress.py missing REQUIREMENT...`` prints those of the ``name==version`` requirements
that are not installed at that version, one per line, for the Makefile to install only those.

Standard library only: it runs in a new venv before anything else is installed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

TAIL_LINES = 80
"""How many of the log's last lines a failed build prints."""

_STEP = re.compile(r"^\s*\[\s*(\d+)/(\d+)\]")  # ninja: "[12/193] /usr/bin/g++ ..."
_PERCENT = re.compile(r"^\s*\[\s*(\d+)%\]")  # make: "[ 45%] Building CXX object ..."
_DOWNLOAD = re.compile(r"Downloading (\S+\.tar\.gz) \(([^)]+)\)")
_CACHED = re.compile(r"^\s*Using cached (llama_cpp_python\S*\.whl)")  # built before: no build
_PHASES: tuple[tuple[re.Pattern[str], str], ...] = (
    # (a line of pip's or scikit-build-core's verbose output, what the user is told)
    (re.compile(r"^\s*Installing build dependencies"), "installing the build tools (scikit-build-core)"),
    (re.compile(r"^\s*\*\*\* Configuring CMake"), "configuring llama.cpp (CMake)"),
    (re.compile(r"^\s*\*\*\* Building project"), "compiling llama.cpp"),
    (re.compile(r"^\s*\*\*\* Installing project into wheel"), "packaging the wheel"),
    # Not indented: pip's own install, not the one into the isolated build environment.
    (re.compile(r"^Installing collected packages"), "installing"),
)
_BAR_WIDTH = 30


class Display:
    """The terminal side: phase lines, and one compile progress line redrawn in place."""

    def __init__(self, stream: TextIO, *, terminal: bool, started: float) -> None:
        self.stream = stream
        self.terminal = terminal
        self.started = started
        self.open_line = False  # a progress line without its newline yet
        self.shown = -1  # the last percentage shown
        self.phases: set[str] = set()

    def phase(self, text: str) -> None:
        """Announce a phase once, on its own line."""
        if text in self.phases:
            return
        self.phases.add(text)
        self.end_line()
        self.write(f"  {text}... ({self.elapsed()})\n")

    def progress(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` compile steps: redrawn on a terminal, every 10 % otherwise."""
        percent = max(0, min(100, done * 100 // max(total, 1)))
        step = 1 if self.terminal else 10
        if percent // step == self.shown // step:
            return
        self.shown = percent
        filled = _BAR_WIDTH * percent // 100
        line = (
            f"  [{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {percent:3d}%  {done}/{total}  {self.elapsed()}"
        )
        if self.terminal:
            self.write(f"\r{line}")
            self.open_line = True
        else:
            self.write(f"{line}\n")

    def end_line(self) -> None:
        """Finish the progress line, if one is open."""
        if self.open_line:
            self.write("\n")
            self.open_line = False

    def elapsed(self) -> str:
        """Time since the start, as ``m:ss``."""
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def write(self, text: str) -> None:
        """Write and flush."""
        self.stream.write(text)
        self.stream.flush()


def show(line: str, display: Display) -> None:
    """Turn one output line of the build into what the terminal shows, if anything."""
    if match := _STEP.match(line):
        display.progress(int(match[1]), int(match[2]))
        return
    if match := _PERCENT.match(line):
        display.progress(int(match[1]), 100)
        return
    if match := _DOWNLOAD.search(line):
        display.phase(f"downloading {match[1]} ({match[2]})")
        return
    if match := _CACHED.match(line):
        display.phase(f"using {match[1]}, built earlier and kept in pip's cache")
        return
    for pattern, text in _PHASES:
        if pattern.match(line):
            display.phase(text)
            return


def build(log: Path, command: Sequence[str], stream: TextIO = sys.stdout) -> int:
    """Run ``command``, log all its output, show its progress; return its exit status."""
    started = time.monotonic()
    display = Display(stream, terminal=stream.isatty(), started=started)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("w", encoding="utf-8") as out:
        try:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        except OSError as error:
            display.write(f"cannot run {command[0]}: {error}\n")
            return 127
        assert process.stdout is not None
        try:
            for raw in process.stdout:
                text = raw.decode("utf-8", errors="replace")
                out.write(text)
                for line in text.replace("\r", "\n").splitlines():
                    tail.append(line)
                    show(line, display)
            status = process.wait()
        except KeyboardInterrupt:
            process.terminate()
            process.wait()
            display.end_line()
            return 130
    display.end_line()
    if status != 0:
        display.write(f"\nthe build failed (exit status {status}); the last {len(tail)} lines of its log:\n")
        display.write("".join(f"  {line}\n" for line in tail))
        display.write(f"full log: {log}\n")
    else:
        display.write(f"  done in {display.elapsed()} (log: {log})\n")
    return status


def missing(requirements: Sequence[str]) -> list[str]:
    """The ``name==version`` requirements not installed at exactly that version."""
    absent: list[str] = []
    for requirement in requirements:
        name, _, version = requirement.partition("==")
        try:
            installed = importlib.metadata.version(name.strip())
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed is None or (version and installed != version.strip()):
            absent.append(requirement)
    return absent


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``build`` or ``missing`` command; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="run a build command with progress, logging its output")
    build_parser.add_argument("log", type=Path)
    build_parser.add_argument("build_command", nargs=argparse.REMAINDER)
    missing_parser = commands.add_parser("missing", help="print the requirements not installed")
    missing_parser.add_argument("requirements", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "build":
        command: list[str] = args.build_command
        if command[:1] == ["--"]:
            command = command[1:]
        if not command:
            parser.error("build needs a command after the log file")
        return build(args.log, command)
    print("\n".join(missing(args.requirements)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
