"""One name per idea across the product: no two modules of the core, and no two public classes
anywhere in console/ and jobs/, share a name.

Two `session.py`, two `ClusterConfig`s, read side by side in a traceback, an import or a
review, are one idea to the reader and two to the code: the next change goes to the wrong one.
The doors (console/cli, the console's screens and widgets, the walkthroughs' evidence) are named
after what they show, so they may share a name with the idea they present (`cli/plan.py` is the
`plan` command of `domain/plan.py`'s plan); so may a package's own `errors`, and the plan job
that computes the plan.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "jobs")
#: Modules named after what they present to the operator.
DOORS = (
    "console/cli/",
    "console/ui/screens/",
    "console/ui/widgets/",
    "console/services/walkthrough/evidence/",
)
#: Module names that mean one idea wherever they are.
ONE_IDEA = {
    "errors": "each package's own errors",
    "plan": "the plan: its value (domain/plan.py) and the job that computes it (jobs/plan.py)",
}
SKIPPED = {"__init__", "__main__"}


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _shared(names: dict[str, list[str]]) -> dict[str, list[str]]:
    return {n: sorted(where) for n, where in sorted(names.items()) if len(where) > 1}


def test_no_two_core_modules_share_a_name() -> None:
    names: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        where = path.relative_to(ROOT).as_posix()
        if path.stem in SKIPPED or path.stem in ONE_IDEA or where.startswith(DOORS):
            continue
        names[path.stem].append(where)
    assert _shared(names) == {}


def test_no_two_public_classes_share_a_name() -> None:
    names: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                names[node.name].append(path.relative_to(ROOT).as_posix())
    assert _shared(names) == {}
