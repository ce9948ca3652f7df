"""The kubernetes client's re-exporting packages, loaded name by name on first use.

``kubernetes/__init__.py`` imports every subpackage (config, dynamic,
stream, utils, leaderelection, informer), and the generated
``kubernetes.client``, ``kubernetes.client.api`` and
``kubernetes.client.models`` import each of their ~65 API classes and ~770
models up front. A command that reads a few nodes, or the agent draining a
pool, uses a dozen models; the rest cost 33 MiB of resident memory in every
process that imports the client (the CLI, the agent, its warm command server)
and a third of a second of start.

Those four ``__init__`` files are nothing but ``from X import Name`` lines
(and a ``__version__``). ``install`` puts a finder first on ``sys.meta_path``
that loads these packages from their own source with every such line turned
into an entry of a module ``__getattr__`` (PEP 562): ``client.V1Pod`` imports
``kubernetes.client.models.v1_pod`` the first time it is asked for, and keeps
it; the ApiClient's deserializer finds its models by name the same way; any
other statement of those files runs as written. Where no source is at hand
(a distribution of bytecode only), the package loads as usual.

Installed by ``kubectl_rollout/__init__.py``, so before anything of ours
imports the client. If the client was imported first (a host program's
choice), nothing changes: both ways give the same objects.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ast

#: the packages whose ``__init__`` only re-exports, loaded lazily
PACKAGES = frozenset({"kubernetes", "kubernetes.client", "kubernetes.client.api", "kubernetes.client.models"})


def exports(source: str, package: str) -> tuple[dict[str, tuple[str, str | None]], ast.Module]:
    """What a package's ``__init__`` re-exports and the rest of it.

    Each name bound by a module-level ``from kubernetes... import Name`` (or ``from . import sub``) maps to
    (module, attribute), attribute None for a submodule; so does each submodule of the package that those
    imports load, which the import binds on the package as a side effect (``kubernetes.client.models``, once
    ``from kubernetes.client.models.v1_pod import V1Pod`` ran). The other statements come back as a module AST.
    """
    import ast  # only when a package loads: `version --client` pays nothing for it

    tree = ast.parse(source)
    where: dict[str, tuple[str, str | None]] = {}
    submodules: dict[str, tuple[str, str | None]] = {}
    rest: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue  # a statement of the file's own; meaningless once it imports nothing
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kubernetes."):
            if str(node.module).startswith(f"{package}."):
                child = str(node.module)[len(package) + 1 :].split(".")[0]
                submodules[child] = (f"{package}.{child}", None)
            for alias in node.names:
                if alias.name != "*":
                    where[alias.asname or alias.name] = (str(node.module), alias.name)
                    continue
                rest.append(node)  # a star import cannot be named in advance: it runs as written
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            for alias in node.names:
                where[alias.asname or alias.name] = (f"{package}.{alias.name}", None)
        else:
            rest.append(node)
    tree.body = rest
    return submodules | where, tree  # a name the file binds itself wins over a submodule's, as it does eagerly


def lazy_attributes(module: ModuleType, where: dict[str, tuple[str, str | None]]) -> None:
    """Give ``module`` a ``__getattr__`` that imports each name of ``where`` on first use, and a ``__dir__``."""

    def __getattr__(name: str) -> Any:
        try:
            module_name, attribute = where[name]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
        imported = importlib.import_module(module_name)  # the import system's own locks order concurrent imports
        value = imported if attribute is None else getattr(imported, attribute)
        setattr(module, name, value)  # the next lookup finds it without coming here
        return value

    def __dir__() -> Iterable[str]:
        return sorted(set(module.__dict__) | set(where))

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    module.__all__ = sorted(where)  # type: ignore[attr-defined]


class _LazyPackageLoader:
    """Runs a re-exporting package's ``__init__`` with its imports deferred; its own loader otherwise."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def __getattr__(self, name: str) -> Any:
        """The original loader's other methods (``create_module``, ``get_source`` for a traceback, ...)."""
        return getattr(self.original, name)

    def exec_module(self, module: ModuleType) -> None:
        get_source = getattr(self.original, "get_source", None)
        source = get_source(module.__name__) if get_source is not None else None
        if source is None:
            self.original.exec_module(module)
            return
        where, rest = exports(source, module.__name__)
        origin = module.__spec__.origin if module.__spec__ is not None else None
        exec(compile(rest, origin or module.__name__, "exec"), module.__dict__)
        lazy_attributes(module, where)


class _LazyPackageFinder:
    """Finds the packages of ``PACKAGES`` where the import system would, and loads them lazily."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return None
        spec.loader = _LazyPackageLoader(spec.loader)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Load the client's re-exporting packages lazily from now on (once per process; a no-op after)."""
    if not any(isinstance(finder, _LazyPackageFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LazyPackageFinder())
