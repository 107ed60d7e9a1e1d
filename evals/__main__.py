"""``python -m evals``: see :mod:`evals.cli`."""

from evals.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
