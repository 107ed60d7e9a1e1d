"""``python -m nestor``: the same as the ``nestor`` console script."""

import sys

from nestor.cli.entry import main

sys.exit(main())
