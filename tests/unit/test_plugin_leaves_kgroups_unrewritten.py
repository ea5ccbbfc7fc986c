"""pytest rewrites the asserts of every module of a distribution that
provides a plugin: kgroups' whole package, each module through an AST pass
(with no bytecode cache under PYTHONDONTWRITEBYTECODE) that CPython 3.11
cannot run in two threads at once ("AST constructor recursion depth
mismatch"), as a broker thread's first imports beside a test's do. kgroups'
plugin takes its package out of that."""

from __future__ import annotations

import importlib
import sys


def test_kgroups_modules_are_imported_without_assertion_rewriting() -> None:
    name = "kgroups.client.delivery"
    sys.modules.pop(name, None)  # imported afresh, through the import hooks of now
    module = importlib.import_module(name)
    assert type(module.__loader__).__name__ != "AssertionRewritingHook"
