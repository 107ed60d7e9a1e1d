"""The ``nestor`` console script: a fast path for ``--version`` and one place that turns errors into lines.

Importing the command-line app pulls in Typer and Rich, and running a prompt pulls in pydantic-ai:
``--version`` answers before any of that is imported. Every :class:`NestorError` ends as
``error: <cause>`` and ``hint: <what to do>`` on stderr with exit code 1 (2 for a usage mistake:
no such command or flag, a missing argument, a value that does not parse); a traceback is shown
only with ``--debug``.
"""

from __future__ import annotations

import sys

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from nestor import __version__

        print(f"nestor {__version__}")
        return 0
    debug = "--debug" in args
    try:
        from nestor.cli.main import run_app

        return run_app(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, never a traceback
        return report_error(exc, debug=debug)


def report_error(exc: BaseException, *, debug: bool) -> int:
    """Print ``exc`` as ``error:``/``hint:`` lines (with the traceback under ``--debug``)."""
    from nestor.core.errors import NestorError

    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, NestorError):
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    else:
        print(f"error: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        if not debug:
            print("hint: rerun with --debug for the traceback, and report it", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
