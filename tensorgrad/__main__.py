"""``python -m tensorgrad``: the same as the ``tensorgrad`` command."""

import sys

from tensorgrad.cli import main

sys.exit(main())
