"""The import graph of the product: no cycle, not even through an import of types only, and no
import inside a function without a reason.

A module imported inside a function is one a start should not pay for (a library as heavy as
pyarrow or Textual, a screen or a service the console's first frame does not show): each says so
in a `# deferred:` comment right above it, and where that comment names a library, importing the
module there must really load the library, and the importing module must not load it already.
Imports under TYPE_CHECKING run under mypy only: they are no edge of the graph of what loads
what, but they are of what depends on what (a screen importing the app for its type is a
circle all the same).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "jobs")

#: A library a `# deferred:` comment may name, by the word it uses, and its top-level module.
LIBRARIES = {
    "pyarrow": "pyarrow",
    "pandas": "pandas",
    "pyspark": "pyspark",
    "textual": "textual",
    "cryptography": "cryptography",
    "lz4": "lz4",
    "zstandard": "zstandard",
}
#: Modules outside the tree that load a library the tree's own imports do not show.
LOADS = {"pyarrow.dataset": {"pandas"}}


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_no_module_imports_itself_back_even_for_its_types() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False)
    assert _cycles(graph) == []


# ---- imports inside functions ---------------------------------------------------------------


def _module_path(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import names (a `from` names its module and, maybe, submodules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative (the wire client's): from the package the module is in
        parts = module.split(".")
        is_package = (_module_path(module) or Path()).name == "__init__.py"
        anchor = parts if is_package else parts[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _imports(
    module: str, *, in_functions: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """The module's imports at its top (outside TYPE_CHECKING), or those inside its functions,
    each with whether it opens a run of imports (the one a comment stands above)."""
    path = _module_path(module)
    assert path is not None, module

    def walk(
        body: list[ast.stmt], inside: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        previous: ast.stmt | None = None
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                if inside == in_functions:
                    yield node, not isinstance(previous, ast.Import | ast.ImportFrom)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                pass
            else:
                nested = inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                for field in ("body", "orelse", "finalbody"):
                    yield from walk(getattr(node, field, []), nested)
                for handler in getattr(node, "handlers", []):
                    yield from walk(handler.body, nested)
            previous = node

    yield from walk(ast.parse(path.read_text(encoding="utf-8")).body, False)


@cache
def _loads(module: str) -> frozenset[str]:
    """Every module that importing `module` imports (its top-level imports, all the way down)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages run first
        if name.split(".")[0] in PACKAGES and _module_path(name) is not None:
            for node, _ in _imports(name, in_functions=False):
                todo += [t for t in _targets(name, node) if _exists(t)]
    return frozenset(seen)


def _exists(name: str) -> bool:
    """A module of the tree (not a name imported from one), or a module outside it."""
    return name.split(".")[0] not in PACKAGES or _module_path(name) is not None


def _libraries(modules: frozenset[str]) -> set[str]:
    tops = {m.split(".")[0] for m in modules}
    for m in modules:
        tops |= LOADS.get(m, set())
    return tops & set(LIBRARIES.values())


def _deferrals() -> Iterator[tuple[str, ast.Import | ast.ImportFrom, str, int]]:
    """Every import inside a function, with the comment above the run of imports it is in and
    the line the run starts on."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            lines = path.read_text(encoding="utf-8").splitlines()
            comment, start = "", 0
            for node, opens in _imports(module, in_functions=True):
                if opens:
                    start = node.lineno
                    above: list[str] = []
                    i = node.lineno - 2
                    while i >= 0 and lines[i].strip().startswith("#"):
                        above.insert(0, lines[i].strip())
                        i -= 1
                    comment = " ".join(above)
                yield module, node, comment, start


def test_an_import_in_a_function_says_what_it_defers() -> None:
    silent = [
        f"{module}:{node.lineno}"
        for module, node, comment, _ in _deferrals()
        if "# deferred:" not in comment
    ]
    assert silent == []


def test_a_deferred_library_is_loaded_there_and_not_before() -> None:
    """What a run of imports under one comment loads, together, holds what the comment names."""
    runs: dict[tuple[str, str, int], set[str]] = {}
    for module, node, comment, start in _deferrals():
        loaded = runs.setdefault((module, comment, start), set())
        for target in _targets(module, node):
            if _exists(target):
                loaded |= _libraries(_loads(target))
    wrong = []
    for (module, comment, line), loaded in runs.items():
        said = comment.split("# deferred:", 1)[-1].lower()
        for word, lib in LIBRARIES.items():
            if word in said and (lib in _libraries(_loads(module)) or lib not in loaded):
                wrong.append(f"{module}:{line} says it defers {lib}")
    assert wrong == []


def test_the_checks_see_what_they_are_about() -> None:
    """The library check is not vacuous: it finds pyarrow behind the planner, and the CLI's
    entry point loads none of the libraries."""
    assert "pyarrow" in _libraries(_loads("console.services.plan.planner"))
    assert _libraries(_loads("console.cli")) == set()
    assert any("pyarrow" in comment for _, _, comment, _ in _deferrals())


def test_the_command_line_loads_what_its_command_needs() -> None:
    """`--version` and the console's start load no wire client; a read (`lag`, `groups`) no
    planner, writer, console screen, YAML or HTTP client: each is loaded where it is used."""
    assert "console.rocketmq.admin" not in _loads("console.cli")
    read = _loads("console.cli.browse")
    for absent in (
        "console.services.plan",
        "console.services.apply",
        "console.services.walkthrough",
        "console.ui.app",
        "console.domain.lag_trend",
        "console.domain.plan",
        "yaml",
        "urllib.request",
    ):
        assert absent not in read, absent
    assert "console.rocketmq.admin" in read  # the check sees the read's own imports
