"""Fetching the jars: cache location, reuse, and redoing a half-finished download.

A fake `mvn` on PATH stands in for Maven: it writes jars into -DoutputDirectory, or fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.sandbox.cache import Distribution, cache_root
from console.sandbox.errors import FetchError, MissingToolError
from console.sandbox.jars import fetch_jars, is_fetched

FAKE_MVN = """#!/bin/sh
echo "$@" >> "{calls}"
[ -f "{fail}" ] && {{ echo "BUILD FAILURE: could not resolve rocketmq-broker"; exit 1; }}
for arg in "$@"; do
  case "$arg" in -DoutputDirectory=*) out="${{arg#-DoutputDirectory=}}";; esac
done
for n in 1 2 3; do echo jar > "$out/dep-$n.jar"; done
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "mvn-calls"
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN.format(calls=calls, fail=tmp_path / "fail"))
    mvn.chmod(0o755)
    java = bin_dir / "java"
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    return calls


def mvn_calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def test_cache_root_from_environment(tmp_path: Path) -> None:
    assert cache_root({"RMQ_CONSOLE_CACHE": str(tmp_path)}) == tmp_path
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "rmq-console"
    assert cache_root({}) == Path.home() / ".cache" / "rmq-console"


async def test_first_fetch_downloads_then_reuses(tmp_path: Path, fake_mvn: Path) -> None:
    cache = tmp_path / "cache"
    first = await fetch_jars(cache)
    assert first.downloaded
    assert first.jar_count == 3
    assert first.distribution == Distribution.in_cache(cache)
    assert first.distribution.lib == cache / "rocketmq-5.3.3" / "lib"
    assert is_fetched(cache)

    second = await fetch_jars(cache)
    assert not second.downloaded
    calls = mvn_calls(fake_mvn)
    assert len(calls) == 1
    assert "dependency:copy-dependencies" in calls[0]


async def test_download_without_marker_is_redone(tmp_path: Path, fake_mvn: Path) -> None:
    cache = tmp_path / "cache"
    dist = (await fetch_jars(cache)).distribution
    dist.marker.unlink()  # as if the earlier run was killed before it finished
    (dist.lib / "half-written.jar").write_text("")
    again = await fetch_jars(cache)
    assert again.downloaded
    assert not (dist.lib / "half-written.jar").exists()


async def test_failed_download_leaves_no_marker(tmp_path: Path, fake_mvn: Path) -> None:
    (tmp_path / "fail").touch()
    cache = tmp_path / "cache"
    with pytest.raises(FetchError, match="could not resolve rocketmq-broker"):
        await fetch_jars(cache)
    assert not is_fetched(cache)


async def test_missing_maven_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(MissingToolError) as info:
        await fetch_jars(tmp_path / "cache")
    assert "mvn" in info.value.missing


async def test_another_version_has_its_own_directory(tmp_path: Path, fake_mvn: Path) -> None:
    cache = tmp_path / "cache"
    current = await fetch_jars(cache)
    old = await fetch_jars(cache, version="4.9.7")
    assert old.downloaded
    assert old.distribution.lib == cache / "rocketmq-4.9.7" / "lib"
    assert current.distribution.lib != old.distribution.lib
    calls = mvn_calls(fake_mvn)
    assert "-Drocketmq.version=4.9.7" in calls[1]
    assert not (await fetch_jars(cache)).downloaded  # 5.3.3's download is still good
