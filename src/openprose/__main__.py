"""``python -m openprose``: the same as the ``prose`` command (where the installed script
cannot be started by name, e.g. Windows, which runs no `#!` line)."""

import sys

from openprose.cli import main

sys.exit(main())
