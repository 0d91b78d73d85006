"""``python -m router.mcp``: the same as ``router mcp``."""

import sys

from router.mcp.cli import main

sys.exit(main())
