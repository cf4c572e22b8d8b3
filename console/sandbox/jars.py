"""Fetches the Apache RocketMQ jars (namesrv, broker, tools, client) into the cache with Maven;
the proxy and the official gRPC client each into a directory of their own."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from console.sandbox.cache import (
    GRPC_CLIENT_VERSION,
    ROCKETMQ_VERSION,
    Distribution,
    cache_root,
    file_lock,
)
from console.sandbox.errors import FetchError
from console.sandbox.proc import log_tail
from console.sandbox.toolchain import find_tools


@dataclass(frozen=True, slots=True)
class FetchResult:
    distribution: Distribution
    downloaded: bool  # False when a complete earlier download was reused
    jar_count: int
    seconds: float


def pom_path(name: str = "pom.xml") -> Path:
    """The pom that lists the jars; shipped with the package so a wheel install can fetch too."""
    return Path(str(resources.files("console.sandbox") / "resources" / name))


PROXY_POM = "proxy-pom.xml"
GRPC_CLIENT_POM = "grpc-client-pom.xml"


async def fetch_jars(
    cache: Path | None = None, *, force: bool = False, version: str = ROCKETMQ_VERSION
) -> FetchResult:
    """Make sure `<cache>/rocketmq-<version>/lib` holds every jar; download with Maven if not.

    `version` is another RocketMQ release with the same artifacts (4.9.7 for the 4.x sandbox,
    see sandbox.legacy). Raises MissingToolError when a download is needed and mvn (or the JDK)
    is absent, and FetchError with Maven's output when the download fails.
    """
    dist = Distribution.in_cache(cache or cache_root(), version)
    return await _fetch(dist, pom_path(), version, force=force)


async def fetch_proxy(
    cache: Path | None = None, *, force: bool = False, version: str = ROCKETMQ_VERSION
) -> FetchResult:
    """Make sure `<cache>/rocketmq-proxy-<version>/lib` holds the proxy and its dependencies
    (the broker's among them: the proxy runs on its classes); download them if not."""
    dist = Distribution.proxy_in_cache(cache or cache_root(), version)
    return await _fetch(dist, pom_path(PROXY_POM), version, force=force)


async def fetch_grpc_client(
    cache: Path | None = None, *, force: bool = False, version: str = GRPC_CLIENT_VERSION
) -> FetchResult:
    """Make sure `<cache>/rocketmq-client-java-<version>/lib` holds the gRPC client (one shaded
    jar); download it with Maven if not."""
    dist = Distribution.grpc_client_in_cache(cache or cache_root(), version)
    return await _fetch(dist, pom_path(GRPC_CLIENT_POM), version, force=force)


async def _fetch(dist: Distribution, pom: Path, version: str, *, force: bool) -> FetchResult:
    started = time.monotonic()
    stamp = _pom_stamp(pom, version)
    async with file_lock(dist.root.with_name(dist.root.name + ".lock")):
        jars = _complete_jars(dist, stamp)
        if jars and not force:
            return FetchResult(dist, False, jars, time.monotonic() - started)
        tools = find_tools("mvn")
        assert tools.mvn is not None
        dist.marker.unlink(missing_ok=True)
        # A half-finished earlier download is thrown away rather than trusted.
        shutil.rmtree(dist.lib, ignore_errors=True)
        dist.lib.mkdir(parents=True)
        log = dist.root / "mvn.log"
        argv = [
            str(tools.mvn),
            "-q",
            "-B",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={dist.lib}",
            f"-Drocketmq.version={version}",
        ]
        await _run_logged(argv, log)
        jars = len(list(dist.lib.glob("*.jar")))
        if jars == 0:
            raise FetchError(f"mvn finished but {dist.lib} holds no jars; see {log}")
        dist.marker.write_text(f"{stamp} {jars}\n")
        return FetchResult(dist, True, jars, time.monotonic() - started)


def is_fetched(cache: Path | None = None) -> bool:
    dist = Distribution.in_cache(cache or cache_root())
    return _complete_jars(dist, _pom_stamp(pom_path())) > 0


def _pom_stamp(pom: Path, version: str = ROCKETMQ_VERSION) -> str:
    """A changed pom (another version, another artifact) invalidates the cached jars."""
    digest = hashlib.sha256(pom.read_bytes())
    # The defaults' stamps stay what earlier caches recorded.
    if version not in (ROCKETMQ_VERSION, GRPC_CLIENT_VERSION):
        digest.update(version.encode())
    return digest.hexdigest()[:16]


def _complete_jars(dist: Distribution, stamp: str) -> int:
    """Number of jars of a complete download made from this pom, 0 if there is none."""
    try:
        recorded_stamp, recorded_count = dist.marker.read_text().split()
    except (OSError, ValueError):
        return 0
    present = len(list(dist.lib.glob("*.jar")))
    if recorded_stamp != stamp or present < int(recorded_count):
        return 0
    return present


async def _run_logged(argv: list[str], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=fd, stderr=fd
        )
    finally:
        os.close(fd)  # the child holds its own copy
    try:
        code = await proc.wait()
    except asyncio.CancelledError:
        proc.kill()
        await proc.wait()
        raise
    if code != 0:
        raise FetchError(f"`{' '.join(argv)}` exited with {code}:\n{log_tail(log)}")
