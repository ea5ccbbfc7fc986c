"""Every API the broker serves has a handler its route names, importable."""

from __future__ import annotations

import inspect

from kgroups.handlers import ROUTES, load_all
from kgroups.protocol import apis


def test_every_route_names_a_coroutine_function() -> None:
    load_all()
    assert set(ROUTES) == set(apis.SUPPORTED)
    for api_key, route in ROUTES.items():
        assert inspect.iscoroutinefunction(route.handler), api_key
