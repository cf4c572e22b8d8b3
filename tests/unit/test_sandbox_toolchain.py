"""Finding java, javac and mvn, and saying how to install what is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from console.sandbox.errors import MissingToolError
from console.sandbox.toolchain import find_tools


def fake_which(present: dict[str, str]) -> Callable[[str], str | None]:
    return present.get


def test_all_present() -> None:
    which = fake_which({"java": "/usr/bin/java", "javac": "/usr/bin/javac", "mvn": "/usr/bin/mvn"})
    tools = find_tools("javac", "mvn", env={}, which=which)
    assert tools.java == Path("/usr/bin/java")
    assert tools.javac == Path("/usr/bin/javac")
    assert tools.mvn == Path("/usr/bin/mvn")


def test_missing_tools_are_named_with_an_install_hint() -> None:
    which = fake_which({"java": "/usr/bin/java"})
    with pytest.raises(MissingToolError) as info:
        find_tools("javac", "mvn", env={}, which=which)
    assert info.value.missing == ["javac", "mvn"]
    message = str(info.value)
    assert "javac, mvn" in message
    assert "apt-get install" in message
    assert "brew install" in message


def test_java_is_always_required() -> None:
    with pytest.raises(MissingToolError) as info:
        find_tools(env={}, which=fake_which({}))
    assert info.value.missing == ["java"]


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "jdk" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("java", "javac"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    which = fake_which({"java": "/usr/bin/java", "javac": "/usr/bin/javac"})
    tools = find_tools("javac", env={"JAVA_HOME": str(tmp_path / "jdk")}, which=which)
    assert tools.java == bin_dir / "java"
    assert tools.javac == bin_dir / "javac"
