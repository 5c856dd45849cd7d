"""`perspect` on the command line: thin layers over the Python API."""

from perspect.cli.main import main

__all__ = ["main"]
