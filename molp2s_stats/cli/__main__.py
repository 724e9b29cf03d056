"""``python -m molp2s_stats.cli``: the ``molp2s`` command."""

import sys

from . import main

sys.exit(main())
