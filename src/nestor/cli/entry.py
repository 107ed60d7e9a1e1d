"""The ``nestor`` console script: fast paths, and one place that turns errors into lines.

Importing the command-line app pulls in Typer and Rich, and running a prompt pulls in pydantic-ai:
``--version`` answers before any of that is imported, and ``run``, ``mcp serve``, ``acp`` and
``batch`` are handed to the warm process (``nestor serve``, :mod:`nestor.cli.warm`) when one of
this installation answers; otherwise they run here and start one for the next command. Every
:class:`NestorError` ends as ``error: <cause>`` and ``hint: <what to do>`` on stderr with exit code
1 (2 for a usage mistake: no such command or flag, a missing argument, a value that does not
parse); a traceback is shown only with ``--debug``
(:func:`~nestor.cli.error_report.report_error`, which the REPL uses too).
"""

from __future__ import annotations

import sys

from nestor.cli.error_report import report_error

EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from nestor import __version__

        print(f"nestor {__version__}")
        return 0
    if args[:1] == ["serve"]:
        from nestor.cli.warm.server import serve_command

        return serve_command(args[1:], run=run_here)
    from nestor.cli.warm.client import is_warm_command
    from nestor.cli.warm.place import warm_enabled

    if not (is_warm_command(args) and warm_enabled()):
        return run_here(args)
    from nestor.cli.warm.client import run_warm, start_server

    code = run_warm(args)
    if code is not None:
        return code
    try:
        return run_here(args)
    finally:
        start_server()


def run_here(args: list[str]) -> int:
    """Run the command line with ``args`` in this process and return the exit code."""
    debug = "--debug" in args
    try:
        from nestor.cli.main import run_app

        return run_app(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, never a traceback
        return report_error(exc, debug=debug)


if __name__ == "__main__":
    sys.exit(main())
