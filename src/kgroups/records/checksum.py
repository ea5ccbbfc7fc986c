"""CRC-32C, the checksum of a record batch, from the crc32c package's extension.

The package's ``__init__`` looks its own version up in the installed
distributions' metadata (a scan of site-packages) and imports its command
line: some 30 ms of CPU in a fresh interpreter, as much as the rest of the
broker's storage. The broker uses the extension alone, so it is loaded
without the package's ``__init__`` while the package is not imported yet.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType

__all__ = ["crc32c"]

_EXTENSION = "crc32c._crc32c"


def _extension() -> ModuleType:
    loaded = sys.modules.get(_EXTENSION)
    if loaded is not None:
        return loaded
    package = None if "crc32c" in sys.modules else importlib.util.find_spec("crc32c")
    if package is not None and package.submodule_search_locations:
        locations = list(package.submodule_search_locations)
        spec = importlib.machinery.PathFinder.find_spec(_EXTENSION, locations)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            # Registered, so that a later ``import crc32c`` uses this one.
            sys.modules[_EXTENSION] = module
            spec.loader.exec_module(module)
            return module
    import crc32c._crc32c

    return crc32c._crc32c


# crc32c(data, value=0) -> int, over any bytes-like object.
crc32c: Callable[..., int] = _extension().crc32c
