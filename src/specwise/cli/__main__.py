import sys

from specwise.cli import main

sys.exit(main())
