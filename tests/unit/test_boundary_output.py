"""How `plan --boundary` and `message` print boundaries: each changed queue with its messages or
why they are absent, a boundary that could not be read named on stderr and exiting 1, and the
JSON form. (Against the real brokers: tests/integration/test_boundary_messages.py and
test_plan_cli.py.)"""

from __future__ import annotations

import json

import pytest

from console.cli.messages import boundaries_document, print_boundaries, print_message, report_unread
from console.domain.boundary_messages import (
    NOT_COMMITTED_NOTE,
    Absence,
    Boundary,
    BoundaryRequest,
    MessageView,
    deleted_note,
    local_time,
)
from console.rocketmq.message import decode_message

from .records import Record

BINARY = Record(queue_offset=41, body=bytes(range(10)), properties={"KEYS": "b1"})


def view(record: Record) -> MessageView:
    return MessageView.of(decode_message(record.encode()), "broker-a")


def test_each_changed_queue_is_printed_with_its_messages_or_why_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    skip = Boundary(BoundaryRequest("orders", "broker-a", 3, 30, 42), view(Record()), None,
                    view(BINARY), None)  # fmt: skip
    down = "broker-b did not answer: timed out"
    unread = Boundary(BoundaryRequest("orders", "broker-b", 0, 5, 9), None, down, None, down,
                      Absence.UNANSWERED, Absence.UNANSWERED)  # fmt: skip
    fresh = Boundary(BoundaryRequest("orders", "broker-a", 1, None, 2), None, deleted_note(4),
                     None, NOT_COMMITTED_NOTE, Absence.DELETED, Absence.NOT_COMMITTED)  # fmt: skip
    print_boundaries([skip, unread, fresh])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("boundaries (first message consumed after the reset")
    assert out[1] == "orders/broker-a/3  30 -> 42"
    assert out[2].startswith("  first    @42  ")
    assert out[2].endswith("  12 B")
    assert out[3:5] == ["           id AC11000100002A9F", "           keys k1 k2  tags paid"]
    assert out[5] == '           {"order": 1}'
    assert out[6].startswith("  skipped  @41  ")
    assert out[9] == "           hex 00 01 02 03 04 05 06 07 08 09"
    assert out[10:13] == [
        "orders/broker-b/0  5 -> 9",
        f"  first    @9  {down}",
        f"  skipped  @8  {down}",
    ]
    assert out[13:] == [
        "orders/broker-a/1  unknown -> 2",
        "  first    @2  deleted: below the min offset 4",
        f"  skipped  @1  {NOT_COMMITTED_NOTE}",
    ]
    assert report_unread([skip, fresh]) == 0
    assert capsys.readouterr().err == ""
    assert report_unread([skip, unread, unread]) == 1
    assert capsys.readouterr().err == f"rmq-console: boundary not read: {down} (4 messages)\n"

    document = json.loads(json.dumps(boundaries_document([skip, unread])))
    assert document[0]["first"]["queue_offset"] == 42
    assert document[0]["last_skipped"]["body_binary"] is True
    assert document[1]["first"] is None
    assert (document[1]["first_note"], document[1]["first_absence"]) == (down, "no answer")


def test_boundaries_fit_80_columns_and_keep_the_whole_head(
    capsys: pytest.CaptureFixture[str],
) -> None:
    body = ('{"order": 12345, "customer": "' + "c" * 200 + '"}').encode()
    props = {"TAGS": "refund-requested", "KEYS": "order-12345 customer-9", "UNIQ_KEY": "7F" * 16}
    long = view(Record(queue_offset=1_234_567_890, body=body, properties=props))
    replay = BoundaryRequest("payments-eu-west", "broker-a", 15, 1_234_567_900, 1_234_567_890)
    print_boundaries([Boundary(replay, long, None, None, None)])
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out[1:]) <= 80, out
    shown = "".join(line.removeprefix(" " * 11) for line in out[5:])
    assert shown == long.body_text
    assert out[3] == "           id " + "7F" * 16


def test_a_message_prints_what_an_operator_reads(capsys: pytest.CaptureFixture[str]) -> None:
    record = Record(properties={"TAGS": "paid", "KEYS": "k1 k2", "ORIGIN_MESSAGE_ID": "X1"})
    print_message(view(record))
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "message        orders/broker-a/3 offset 42",
        f"store time     {local_time(record.store_timestamp)}",
        f"born time      {local_time(record.born_timestamp)}",
        "keys           k1 k2",
        "tags           paid",
        "msg id         - (the producer set none)",
        "offset msg id  7F000001000060E6000000000000AECF",
        "size           12 bytes",
        "reconsume      0",
        "store host     127.0.0.1:24806",
        "properties     ORIGIN_MESSAGE_ID=X1",
        'body           {"order": 1}',
    ]
