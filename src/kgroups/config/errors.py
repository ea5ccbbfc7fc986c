"""The error that stops the broker at start over a bad setting."""

from __future__ import annotations


class ConfigError(ValueError):
    pass
