"""Finds the JDK and Maven programs the sandbox runs, or says how to install them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from console.sandbox.errors import MissingToolError

INSTALL_HINT = (
    "Install a JDK 17+ and Apache Maven, e.g. `sudo apt-get install openjdk-17-jdk-headless maven` "
    "(Debian/Ubuntu), `sudo dnf install java-17-openjdk-devel maven` (Fedora) or "
    "`brew install openjdk@17 maven` (macOS), or set JAVA_HOME to a JDK."
)

Which = Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class Toolchain:
    java: Path
    javac: Path | None = None
    mvn: Path | None = None


def find_tools(
    *names: str, env: Mapping[str, str] | None = None, which: Which = shutil.which
) -> Toolchain:
    """Locate `java` and the other named programs ("javac", "mvn"); raise if any is missing.

    JAVA_HOME wins over PATH for the JDK programs, as the RocketMQ start scripts do.
    """
    env = os.environ if env is None else env
    wanted = ["java", *[n for n in names if n != "java"]]
    found: dict[str, Path] = {}
    for name in wanted:
        path = _locate(name, env, which)
        if path is not None:
            found[name] = path
    missing = [n for n in wanted if n not in found]
    if missing:
        raise MissingToolError(missing, INSTALL_HINT)
    return Toolchain(java=found["java"], javac=found.get("javac"), mvn=found.get("mvn"))


def _locate(name: str, env: Mapping[str, str], which: Which) -> Path | None:
    java_home = env.get("JAVA_HOME")
    if java_home and name in ("java", "javac"):
        candidate = Path(java_home) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    hit = which(name)
    return Path(hit) if hit else None
