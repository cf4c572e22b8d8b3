"""The import contracts in pyproject.toml hold, and they would catch what they are about.

`make lint` runs lint-imports too; running it here means a plain `pytest` run (what a developer
runs most) cannot pass with a layer broken.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    command = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or "lint-imports"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def _contracts() -> list[dict[str, object]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = data["tool"]["importlinter"]["contracts"]
    return contracts


def test_every_contract_is_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_layers_run_one_way() -> None:
    layers = [c for c in _contracts() if c["type"] == "layers" and "containers" not in c]
    assert len(layers) == 1
    assert layers[0]["layers"][:4] == [  # type: ignore[index]
        "console.cli",
        "console.ui",
        "console.remote",
        "console.services",
    ]


def test_the_capabilities_stand_on_each_other_one_way() -> None:
    """console/services is one package per capability, each on those below it only."""
    inner = [c for c in _contracts() if c["type"] == "layers" and "containers" in c]
    assert len(inner) == 1
    assert inner[0]["containers"] == ["console.services"]
    assert inner[0]["layers"] == ["walkthrough", "apply", "plan", "read", "infra"]
    packages = sorted(
        p.name for p in (ROOT / "console" / "services").iterdir() if (p / "__init__.py").exists()
    )
    assert packages == sorted(inner[0]["layers"])  # type: ignore[arg-type]
    loose = sorted(p.name for p in (ROOT / "console" / "services").glob("*.py"))
    assert loose == ["__init__.py"]  # no module outside a capability


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("console/domain/plan.py", "import console.services.infra.workspace", "One-way layers"),
        ("console/ui/format.py", "import socket", "The UI opens no socket"),
        ("console/services/infra/workspace.py", "import jobs.plan", "Jobs depend on the console"),
        (
            "console/services/infra/export.py",
            "import console.sandbox.cache",
            "never imports the sandbox",
        ),
        ("console/cli/render.py", "import console.services.apply.offset_writer", "One write path"),
        ("console/ui/format.py", "import console.services.apply.writer", "One write path"),
        ("console/services/read/reader.py", "import console.services.apply.check", "Capabilities"),
        ("console/services/infra/files.py", "import console.services.plan.load", "Capabilities"),
    ],
)
def test_a_violation_is_caught(tmp_path: Path, module: str, line: str, contract: str) -> None:
    """A copy of the tree with one forbidden import added breaks exactly that contract."""
    for item in ("pyproject.toml", "console", "jobs"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, tmp_path / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, tmp_path / item)
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    result = _lint_imports(tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode != 0
    broken = [ln for ln in result.stdout.splitlines() if " BROKEN" in ln]
    assert len(broken) == 1, result.stdout
    assert contract in broken[0]
