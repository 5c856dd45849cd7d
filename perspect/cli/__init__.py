"""`perspect` on the command line: thin layers over the Python API."""

from perspect.cli.main import main, run

__all__ = ["main", "run"]
