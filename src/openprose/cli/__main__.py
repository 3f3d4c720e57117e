"""``python -m openprose.cli``: the same as the ``prose`` script."""

from openprose.cli import main

raise SystemExit(main())
