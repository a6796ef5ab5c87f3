"""``python -m specwise``: the same CLI as the ``specwise`` command."""

import sys

from specwise.cli import main

sys.exit(main())
