"""Bad input to a command (an argument, a file it names): the CLI prints the
message and exits with code 2, as for argparse's own errors."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    pass
