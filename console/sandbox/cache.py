"""Where the sandbox keeps what it downloads and builds: a cache directory outside the repo."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from console.locations import CACHE_ENV, cache_root

__all__ = [
    "CACHE_ENV",
    "GRPC_CLIENT_VERSION",
    "LITE_CLIENT_VERSION",
    "LITE_RELEASE",
    "ROCKETMQ_VERSION",
    "Distribution",
    "cache_root",
    "file_lock",
    "has_lite_topics",
]

ROCKETMQ_VERSION = "5.3.3"
#: org.apache.rocketmq:rocketmq-client-java, the official gRPC client (apache/rocketmq-clients).
GRPC_CLIENT_VERSION = "5.0.8"
#: The first RocketMQ release with lite topics (RIP-83), and the gRPC client release whose
#: LitePushConsumer and lite producer the sandbox runs against it.
LITE_RELEASE = "5.5.0"
LITE_CLIENT_VERSION = "5.1.0"


def has_lite_topics(version: str) -> bool:
    """Whether RocketMQ `version` has lite topics (5.5.0 and later)."""
    return _release(version) >= _release(LITE_RELEASE)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("-")[0].split("."))


@dataclass(frozen=True, slots=True)
class Distribution:
    """The RocketMQ jars of one version, as laid out in the cache."""

    root: Path

    @classmethod
    def in_cache(cls, cache: Path, version: str = ROCKETMQ_VERSION) -> Distribution:
        return cls(cache / f"rocketmq-{version}")

    @classmethod
    def proxy_in_cache(cls, cache: Path, version: str = ROCKETMQ_VERSION) -> Distribution:
        """The proxy's jars, apart from the brokers' (see resources/proxy-pom.xml)."""
        return cls(cache / f"rocketmq-proxy-{version}")

    @classmethod
    def grpc_client_in_cache(cls, cache: Path, version: str = GRPC_CLIENT_VERSION) -> Distribution:
        """The gRPC client's jar, apart from the brokers' (see resources/grpc-client-pom.xml)."""
        return cls(cache / f"rocketmq-client-java-{version}")

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def marker(self) -> Path:
        """Written only after a complete download; its absence means "fetch again"."""
        return self.root / "lib.complete"

    @property
    def classpath(self) -> str:
        return f"{self.lib}/*"

    @property
    def classes(self) -> Path:
        """Compiled sandbox Java programs, one sub-directory per source hash."""
        return self.root / "classes"


@asynccontextmanager
async def file_lock(path: Path, poll: float = 0.2) -> AsyncIterator[None]:
    """Serialise fetches and builds across processes (a test run and a demo may share a cache).

    Polls a non-blocking flock so that waiting for another process never blocks the event loop.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # The holder is another process: there is no event to wait on, only the lock to retry.
        while not _try_lock(fd):  # noqa: ASYNC110
            await asyncio.sleep(poll)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
