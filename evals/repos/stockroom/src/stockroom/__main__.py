"""Allow ``python -m stockroom``."""

from .cli import main

raise SystemExit(main())
