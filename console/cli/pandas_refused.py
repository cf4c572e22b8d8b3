"""pyarrow without pandas in the console's own process.

pyarrow imports pandas, when it is installed (the Spark Connect client needs it, so it is),
the first time an array is built or `pyarrow.dataset` is loaded, only to ask whether a value is
a pandas object: 0.2-0.3 s of a command's start for a library no console process uses (a
snapshot, a plan's rows and a journal are pyarrow tables, pyspark runs in the job host).
`refuse_pandas` makes pandas unimportable in this process, and pyarrow, for which pandas is
optional, takes it for absent. Only the program's own entry calls it: a test process that calls
`main` may run Spark beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

REFUSED = "pandas"


class PandasRefused:
    """A meta path finder that answers "not installed" for pandas and its modules."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == REFUSED or name.startswith(REFUSED + "."):
            raise ModuleNotFoundError(f"No module named {name!r} (not in the console)", name=name)
        return None


def refuse_pandas() -> None:
    """From now on `import pandas` fails in this process, as if it were not installed."""
    if REFUSED not in sys.modules and not any(isinstance(f, PandasRefused) for f in sys.meta_path):
        sys.meta_path.insert(0, PandasRefused())
