"""`rmq-console message`: one message of a queue, the way an operator wants to read it; and the
printing of a plan's boundaries (`plan --boundary`).

A message is read with a pull as the brokers' TOOLS_CONSUMER (never a group being reset: see
console.services.read.boundary), from the master, else its slave. Times are in this machine's zone,
with the zone. Only the head of the body is printed (text as text, binary as hex).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from console.cli.arguments import target_parent
from console.cli.render import dump_json
from console.cli.target import Target, resolve_target
from console.domain import mqadmin
from console.domain.boundary_messages import (
    Absence,
    Boundary,
    BoundaryRequest,
    MessageView,
    local_time,
)
from console.domain.gaps import EXIT_NOTHING_READ, EXIT_OK, EXIT_PARTIAL
from console.services.read.boundary import read_boundaries


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "message",
        help="show the message at a queue's offset",
        description="Show one message: store time (local, with zone), keys, tags, message id, "
        "offset message id, size and the head of its body, with the mqadmin command that "
        "prints the same. Read with a pull as TOOLS_CONSUMER: no consumer group is touched.",
        parents=[target_parent()],
    )
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-b", "--broker", required=True, help="broker name (e.g. broker-a)")
    p.add_argument("-q", "--queue", type=int, required=True, help="queue id")
    p.add_argument("-o", "--offset", type=_offset, required=True, help="queue offset")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_message)


def _offset(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"an offset is 0 or more, not {value}")
    return value


def _message(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    request = BoundaryRequest(args.topic, args.broker, args.queue, args.offset, args.offset)
    (read,) = read_boundaries_of(target, [request])
    command = mqadmin.message(
        target.cluster.namesrv, args.topic, args.broker, args.queue, args.offset
    )
    (command,) = mqadmin.with_tls([command], target.cluster.tls)
    if args.json:
        dump_json(
            {
                "message": read.first.to_dict() if read.first else None,
                "note": read.first_note,
                "absence": str(read.first_absence) if read.first_absence else None,
                "from_slave": read.from_slave,
                "mqadmin": command,
            }
        )
    elif read.first is not None:
        print_message(read.first, from_slave=read.from_slave)
        print(f"mqadmin equivalent: {command}")
    if read.first is None:
        where = f"{args.topic}/{args.broker}/{args.queue}"
        why = (read.first_note or "").removeprefix("nothing after the target: ")
        print(
            f"rmq-console: no message at {where} offset {args.offset}: {why}",
            file=sys.stderr,
        )
        # A broker that did not answer is a broker down (1); anything else is an answer: the
        # offset holds no message (2, nothing read).
        return EXIT_PARTIAL if read.first_absence is Absence.UNANSWERED else EXIT_NOTHING_READ
    return EXIT_OK


def read_boundaries_of(target: Target, wanted: Sequence[BoundaryRequest]) -> list[Boundary]:
    async def go() -> list[Boundary]:
        async with target.reader() as reader:
            return await read_boundaries(reader, wanted)

    return asyncio.run(go())


def print_message(view: MessageView, *, from_slave: bool = False) -> None:
    rows: list[tuple[str, Any]] = [
        ("message", f"{view.topic}/{view.broker}/{view.queue_id} offset {view.queue_offset}"),
        ("store time", local_time(view.store_time_ms) or "unknown"),
        ("born time", local_time(view.born_time_ms) or "unknown"),
        ("keys", " ".join(view.keys) or "-"),
        ("tags", view.tags or "-"),
        ("msg id", view.msg_id or "- (the producer set none)"),
        ("offset msg id", view.offset_msg_id),
        (
            "size",
            f"{view.size} bytes"
            + (f" ({view.compression} compressed)" if view.compression else ""),
        ),
        ("reconsume", view.reconsume_times),
        ("store host", view.store_host + (" (slave: master down)" if from_slave else "")),
        ("properties", _other_properties(view) or "-"),
        ("body", view.body_text),
    ]
    for label, value in rows:
        print(f"{label:<14} {value}")


def _other_properties(view: MessageView) -> str:
    shown = {"TAGS", "KEYS", "UNIQ_KEY"}
    return " ".join(f"{k}={v}" for k, v in view.properties if k not in shown)


# ---- plan --boundary -----------------------------------------------------------------------------


def print_boundaries(boundaries: Sequence[Boundary]) -> None:
    if not boundaries:
        print("boundaries: the plan changes no queue")
        return
    print("boundaries (first message consumed after the reset; for a skip, the last skipped):")
    for b in boundaries:
        r = b.request
        current = "unknown" if r.current is None else r.current
        slave = "  (read from the slave: master down)" if b.from_slave else ""
        print(f"{r.topic}/{r.broker}/{r.queue_id}  {current} -> {r.target}{slave}")
        _print_one("first", r.target, b.first, b.first_note)
        if r.skips or b.last_note is not None:
            _print_one("skipped", r.target - 1, b.last_skipped, b.last_note)


#: Where a boundary's second and later lines start, and the width they keep to (a terminal of
#: 80 columns, or a ticket pasted from one).
_INDENT = " " * 11
_WIDTH = 80


def _print_one(label: str, offset: int, view: MessageView | None, note: str | None) -> None:
    head = f"  {label:<8} @{offset}"
    if view is None:
        print(f"{head}  {note}")
        return
    keys = " ".join(view.keys) or "-"
    print(f"{head}  {local_time(view.store_time_ms)}  {view.size} B")
    print(f"{_INDENT}id {view.msg_id or view.offset_msg_id}")
    print(f"{_INDENT}keys {keys}  tags {view.tags or '-'}")
    body, room = view.body_text, _WIDTH - len(_INDENT)
    for start in range(0, len(body), room):
        print(f"{_INDENT}{body[start : start + room]}")


def boundaries_document(boundaries: Sequence[Boundary]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in boundaries]


def report_unread(boundaries: Sequence[Boundary]) -> int:
    """One line on stderr per reason a boundary could not be read (each once); EXIT_PARTIAL
    when there is one."""
    reasons: dict[str, int] = {}
    for b in boundaries:
        for note, absence in ((b.first_note, b.first_absence), (b.last_note, b.last_absence)):
            if note is not None and absence is not None and absence.unread:
                reasons[note] = reasons.get(note, 0) + 1
    for note, n in reasons.items():
        queues = f" ({n} messages)" if n > 1 else ""
        print(f"rmq-console: boundary not read: {note}{queues}", file=sys.stderr)
    return EXIT_PARTIAL if reasons else EXIT_OK
