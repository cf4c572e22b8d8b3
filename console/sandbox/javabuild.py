"""Compiles the sandbox's Java consumers against the fetched client jars, once per source version:
SandboxConsumer on the remoting client, GrpcConsumer and LiteClient on the gRPC client (jars of
its own, a release apiece)."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from importlib import resources
from pathlib import Path

from console.sandbox.cache import Distribution, file_lock
from console.sandbox.errors import BuildError
from console.sandbox.toolchain import find_tools

CONSUMER_CLASS = "SandboxConsumer"
GRPC_CONSUMER_CLASS = "GrpcConsumer"
#: The lite producer and LitePushConsumer (a gRPC client with lite topics: 5.1.0+).
LITE_CLIENT_CLASS = "LiteClient"


def consumer_source(name: str = CONSUMER_CLASS) -> bytes:
    return (resources.files("console.sandbox") / "java" / f"{name}.java").read_bytes()


def source_hash(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()[:16]


async def build_consumer(dist: Distribution, name: str = CONSUMER_CLASS) -> Path:
    """Return a classes directory holding `name`.class (SandboxConsumer by default), compiled
    against `dist`'s jars if needed.

    The directory is named by the source hash, so an edited source is recompiled and an old
    build is never mistaken for the current one.
    """
    source = consumer_source(name)
    out = dist.classes / source_hash(source)
    done = out / "build.complete"
    async with file_lock(dist.classes / "build.lock"):
        if done.exists():
            return out
        javac = find_tools("javac").javac
        assert javac is not None
        shutil.rmtree(out, ignore_errors=True)
        src_dir = out / "src"
        src_dir.mkdir(parents=True)
        src = src_dir / f"{name}.java"
        src.write_bytes(source)
        proc = await asyncio.create_subprocess_exec(
            str(javac),
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            dist.classpath,
            "-d",
            str(out),
            str(src),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await proc.communicate()
        if proc.returncode != 0:
            raise BuildError(f"javac failed on {src}:\n{output.decode(errors='replace')}")
        done.write_text(source_hash(source) + "\n")
        return out
