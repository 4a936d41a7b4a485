"""`python -m sequifier` runs the command-line interface."""

from sequifier.cli import entry

entry()
