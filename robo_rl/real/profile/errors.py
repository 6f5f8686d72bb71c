"""The error of a malformed robot profile, and the one-line checks that raise it."""

from __future__ import annotations

from collections.abc import Sequence

from robo_rl.config import ConfigError


class ProfileError(ConfigError):
    """A robot profile is malformed; the message names the file and the field.

    A ConfigError: raised by a section's own check with the section's key first (`rate_limit: must be > 0`), it is
    reported by `robo_rl.config.from_dict` at the key's dotted path (`actions[0].rate_limit: must be > 0`)."""


def require(ok: bool, field: str, message: str) -> None:
    """ProfileError `field: message` unless `ok`."""
    if not ok:
        raise ProfileError(f"{field}: {message}")


def require_unique(names: Sequence[str], field: str) -> None:
    """ProfileError naming the names that `names` holds more than once."""
    dupes = sorted({n for n in names if names.count(n) > 1})
    require(not dupes, field, f"duplicate names {dupes}")
