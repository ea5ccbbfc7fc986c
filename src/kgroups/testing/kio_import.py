"""Imports kio, the protocol library, without hypothesis.

When hypothesis is installed, kio imports it on its own import to register
strategies for kio's primitive types (``st.from_type(i32)``): a third of the
CPU a fresh interpreter spends before its first test broker answers, for
strategies a broker never uses. So the first import of kio made by
``kgroups.testing`` or by the command line (``kgroups serve`` and every other
command) hides hypothesis; a process that imported hypothesis
before keeps kio's strategies, and one that imports it later has hypothesis
in full, only without strategies registered for kio's types.
"""

from __future__ import annotations

import importlib
import sys


def import_kio_without_hypothesis() -> None:
    if "kio.static._phantom" in sys.modules or "hypothesis" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import fails
    try:
        importlib.import_module("kio.static._phantom")
    finally:
        if sys.modules.get("hypothesis", 0) is None:
            del sys.modules["hypothesis"]


import_kio_without_hypothesis()
