"""Finding a partition assignor by its protocol name.

Kept apart from base.py, which the assignors import: this module imports the
assignors, so nothing they import may import it back.
"""

from __future__ import annotations

from kgroups.assignors.base import Assignor
from kgroups.assignors.cooperative_sticky import CooperativeStickyAssignor
from kgroups.assignors.range import RangeAssignor
from kgroups.assignors.roundrobin import RoundRobinAssignor
from kgroups.assignors.sticky import StickyAssignor

__all__ = ["UnknownAssignor", "by_name"]

_FACTORIES: dict[str, type[Assignor]] = {
    RangeAssignor.name: RangeAssignor,
    RoundRobinAssignor.name: RoundRobinAssignor,
    StickyAssignor.name: StickyAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
}


class UnknownAssignor(LookupError):
    pass


def by_name(name: str) -> Assignor:
    """A fresh assignor for a protocol name."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise UnknownAssignor(f"no partition assignor is named {name!r}") from None
    return factory()
