"""What `escalate check` leaves unimported: its start is paid on every pass of a shell loop.

Only for the check's own short process: stand-ins in sys.modules for modules its imports
name but a check never uses, each imported for real the moment something reads from it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

# Imported by detect-secrets at load time but used only to verify secrets online, sign those
# requests, hash baselines and scan files with git in parallel: nothing a check does. They
# were most of the check's start (requests pulls in urllib3, ssl, http.client and email).
# With each, the names detect-secrets reads at import time only to annotate its verify
# functions (`-> requests.Response`), which need no real value.
DEFERRED: dict[str, tuple[str, ...]] = {
    "requests": ("Response",),
    "multiprocessing": (),
    "subprocess": (),
    "hashlib": (),
    "hmac": (),
    # detect-secrets' package and its filters package import its whole file scanner (baseline
    # collection, git, logging with traceback and textwrap) before a plugin can load; the check
    # needs only plugins/ and filters/heuristic.py, which load as submodules of the stand-ins.
    "detect_secrets": (),
    "detect_secrets.filters": (),
}
# pydantic-core's package imports its core_schema module as it loads: thousands of lines of
# typed dicts that only describe schemas, a fifth of a check's start. The packet's schema
# (workflows/packet_schema.py) needs only the compiled validator and its two errors.
CORE, COMPILED_CORE = "pydantic_core", "pydantic_core._pydantic_core"
CORE_NAMES = ("SchemaValidator", "ValidationError", "PydanticCustomError")


class Deferred(types.ModuleType):
    """Stands in for a module until a name it lacks is read, then imports the module."""

    def __getattr__(self, attr: str) -> Any:
        # Only names this stand-in lacks land here: the first one swaps the real module in.
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def _stand_in(name: str) -> Deferred | None:
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    stand_in = Deferred(name)
    # The import statement reads __spec__ (is it initialising?): the real one, found.
    stand_in.__spec__ = spec
    if spec.submodule_search_locations is not None:  # a package: its submodules load as usual
        stand_in.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = stand_in
    return stand_in


def defer_unused_imports() -> None:
    """Put the stand-ins in place, for the modules not imported yet."""
    for name, annotated in DEFERRED.items():
        stand_in = None if name in sys.modules else _stand_in(name)
        for attr in annotated if stand_in is not None else ():
            setattr(stand_in, attr, type(attr, (), {"__module__": f"{name} (not loaded)"}))
    core = None if CORE in sys.modules else _stand_in(CORE)
    if core is not None:
        compiled = importlib.import_module(COMPILED_CORE)
        for attr in CORE_NAMES:
            setattr(core, attr, getattr(compiled, attr))
