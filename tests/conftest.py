"""What every test shares: commands run in their own process, never through a warm one.

``nestor run`` (and ``mcp serve``, ``acp``, ``batch``) would otherwise start ``nestor serve`` on
first use, in the runtime folder every test of this user shares, and later ones would be served
by it. The tests of the warm process set their own runtime folder and turn it back on.
"""

from __future__ import annotations

import os

os.environ["NESTOR_WARM"] = "0"
