"""A real (non-editable) install of the project: it builds without warnings, ships every file of
the tree, and finds the project's themes inside the installed package.

The wheel is built offline with the dev environment's setuptools (`--no-build-isolation`) from a
copy of the tree, and installed with `--no-deps` into a fresh venv that borrows only the dev
environment's third-party packages (Textual, PyYAML), never its editable `console`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_SUFFIXES = {".py", ".tcss", ".java", ".xml", ".yaml"}
PROBE = """
import json, console
from console.ui.themes import PROJECT_THEMES, load_themes
loaded = load_themes([PROJECT_THEMES])
from console.services.walkthrough.guided_run import load_walkthroughs
shipped = load_walkthroughs(environ={"RMQ_CONSOLE_CONFIG": "/nonexistent/config.yaml"})
print(json.dumps({
    "console": console.__file__,
    "walkthroughs": shipped.names,
    "walkthrough_problems": [str(p) for p in shipped.problems],
    "themes_dir": str(PROJECT_THEMES),
    "themes": sorted(t.name for t in loaded.themes),
    "problems": list(loaded.problems),
}))
"""


def _run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(site-packages of the fresh venv, the build's output)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for item in ("console", "jobs", "themes"):
        shutil.copytree(ROOT / item, src / item, ignore=ignore)
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / item, src / item)
    build = _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--wheel-dir",
        tmp / "dist",
        src,
        cwd=tmp,
    )
    (wheel,) = (tmp / "dist").glob("rmq_console-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", wheel, cwd=tmp)
    site = Path(
        _run(
            python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp
        ).stdout.strip()
    )
    # Third-party packages from the dev environment, after the venv's own site-packages: a
    # path listed in a .pth is added as is, so the dev environment's editable-install hook
    # (a .pth of its own there) is never run.
    (site / "dev-packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return site, build.stdout + build.stderr


def test_the_build_does_not_warn(installed: tuple[Path, str]) -> None:
    _, output = installed
    assert "Warning" not in output, output


def test_every_file_of_the_tree_is_installed(installed: tuple[Path, str]) -> None:
    site, _ = installed
    for package in ("console", "jobs"):
        tree = {
            p.relative_to(ROOT)
            for p in (ROOT / package).rglob("*")
            if p.suffix in SHIPPED_SUFFIXES and "__pycache__" not in p.parts
        }
        shipped = {
            p.relative_to(site)
            for p in (site / package).rglob("*")
            if p.suffix in SHIPPED_SUFFIXES and "__pycache__" not in p.parts
        }
        assert tree, package
        assert tree - shipped == set(), "add the missing package to pyproject.toml"


def test_the_installed_package_finds_its_themes(
    installed: tuple[Path, str], tmp_path: Path
) -> None:
    site, _ = installed
    python = site.parents[2] / "bin" / "python"
    found = json.loads(_run(python, "-c", PROBE, cwd=tmp_path).stdout)
    assert Path(found["console"]).is_relative_to(site)
    themes_dir = Path(found["themes_dir"])
    assert themes_dir == site / "console" / "ui" / "project_themes"
    assert found["problems"] == []
    assert found["themes"] == sorted(p.stem for p in (ROOT / "themes").glob("*.yaml"))
    assert {"rmq-dark", "rmq-light", "rmq-contrast"} <= set(found["themes"])
    assert found["walkthrough_problems"] == []
    assert sorted(found["walkthroughs"]) == sorted(
        p.stem for p in (ROOT / "console" / "walkthroughs").glob("*.yaml")
    )
