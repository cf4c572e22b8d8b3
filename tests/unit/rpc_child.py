"""A child process for tests/unit/test_rpc.py: the real RPC child side, with handlers that
echo, raise what they are given, report progress, answer in parts, wait to be cancelled, or crash.

The hello says how to serve: "threads" (serve_threads) or "async" (serve_async).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

from console.services.infra.rpc import Link, Reply, link_to_parent, serve_async, serve_threads

#: How many calls were cancelled, as the child saw it.
cancels = 0
cancels_lock = threading.Lock()


class Unpicklable(Exception):
    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a} and {b}")


def count_cancel() -> None:
    global cancels
    with cancels_lock:
        cancels += 1


def echo(reply: Reply, *args: Any) -> Any:
    return args


def fail(reply: Reply, error: BaseException) -> None:
    raise error


def fail_unpicklably(reply: Reply) -> None:
    raise Unpicklable("one", "two")


def answer_unpicklably(reply: Reply) -> Any:
    return threading.Lock()


def count(reply: Reply, n: int) -> int:
    for i in range(n):
        reply.progress(i + 1, n)
    return n


def squares(reply: Reply, n: int, per_part: int) -> dict[int, int]:
    """i -> i*i for i < n: in parts of `per_part` first, the rest in the answer."""
    whole = n - n % per_part
    for start in range(0, whole, per_part):
        reply.part({i: i * i for i in range(start, start + per_part)})
    return {i: i * i for i in range(whole, n)}


def parts_until_cancelled(reply: Reply) -> None:
    """A part, then waits for the cancel, then another part (nobody's by then)."""
    reply.part({0: 0})
    reply.progress("started")
    reply.cancelled.wait(60)
    reply.part({1: 1})
    raise RuntimeError("stopped")


def part_unpicklably(reply: Reply) -> dict[int, int]:
    reply.part({0: threading.Lock()})
    return {1: 1}


def takes_parts(reply: Reply) -> bool:
    return reply.takes_parts


def block(reply: Reply) -> None:
    """Waits for the cancel; says it started by a progress report."""
    reply.on_cancel(count_cancel)
    reply.progress("started")
    reply.cancelled.wait(60)
    raise RuntimeError("stopped")


def cancelled(reply: Reply) -> int:
    return cancels


def crash(reply: Reply, text: str) -> None:
    print(text, file=sys.stderr, flush=True)
    os._exit(3)


THREADED = {
    "echo": echo,
    "fail": fail,
    "fail_unpicklably": fail_unpicklably,
    "answer_unpicklably": answer_unpicklably,
    "count": count,
    "squares": squares,
    "takes_parts": takes_parts,
    "parts_until_cancelled": parts_until_cancelled,
    "part_unpicklably": part_unpicklably,
    "block": block,
    "cancelled": cancelled,
    "crash": crash,
}


def asynchronous(fn: Any) -> Any:
    async def handle(reply: Reply, *args: Any) -> Any:
        return fn(reply, *args)

    return handle


async def async_block(reply: Reply) -> None:
    reply.progress("started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        count_cancel()
        raise


async def async_parts_until_cancelled(reply: Reply) -> None:
    reply.part({0: 0})
    reply.progress("started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        reply.part({1: 1})
        raise


async def serve_on_loop(link: Link) -> None:
    handlers = {name: asynchronous(fn) for name, fn in THREADED.items()}
    handlers["block"] = async_block
    handlers["parts_until_cancelled"] = async_parts_until_cancelled
    await serve_async(link, handlers)


def main(argv: Sequence[str] | None = None) -> int:
    link = link_to_parent(argv)
    how = link.receive_hello()
    print(f"rpc_child serving with {how}", file=sys.stderr, flush=True)
    if how == "async":
        asyncio.run(serve_on_loop(link))
    else:
        serve_threads(link, THREADED)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
