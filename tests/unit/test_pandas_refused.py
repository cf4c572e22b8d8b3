"""The program's own process goes without pandas: pyarrow, for which it is optional, builds,
writes, reads and counts Parquet without it, and `import pandas` says it is not there. In a
process of its own: this test process runs Spark, which needs pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from console.cli.pandas_refused import refuse_pandas
refuse_pandas()
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
table = pa.Table.from_pylist([{"q": 1}, {"q": 2}], schema=pa.schema([("q", pa.int32())]))
pq.write_table(table, sys.argv[1])
assert pq.read_table(sys.argv[1]).to_pylist() == [{"q": 1}, {"q": 2}]
assert ds.dataset(sys.argv[1], format="parquet").count_rows() == 2
assert "pandas" not in sys.modules
try:
    import pandas
except ModuleNotFoundError as exc:
    print(exc)
"""


def test_pyarrow_works_without_pandas_in_the_programs_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "t.parquet")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "No module named 'pandas' (not in the console)" in done.stdout


ENTRY = """
import sys
import console.cli
sys.argv = ["rmq-console", "--version"]
try:
    getattr(console.cli, sys.argv_entry)()
except SystemExit:
    pass
try:
    import pandas
except ModuleNotFoundError:
    print("refused")
else:
    print("imported")
"""


def _after(entry: str) -> str:
    script = ENTRY.replace("sys.argv_entry", repr(entry))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def test_the_programs_entry_refuses_pandas_and_a_caller_of_main_keeps_it() -> None:
    assert _after("run") == "refused"
    assert _after("main") == "imported"
