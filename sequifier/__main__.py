"""`python -m sequifier` runs the command-line interface."""

import sys

from sequifier.cli import main

sys.exit(main())
