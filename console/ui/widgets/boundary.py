"""The messages at the edge of one queue's reset, under the plan's diff.

For the queue under the diff's cursor: the first message consumed after the reset and, for a
skip, the last one skipped; three lines each (where and when; keys, tags and id; the body's
head), one line when a message is absent, saying why. It fits 80x24 under the diff; longer
lines end in an ellipsis.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from console.domain.boundary_messages import Boundary, MessageView, local_time
from console.domain.plan import PlanRow
from console.ui.tones import toned

#: How a queue's boundary stands in the pane.
READING = "reading"
NOT_READ = "not read"


class BoundaryPane(Static):
    """One queue's boundary; `show` takes the diff row, and what is known of its boundary."""

    def show(
        self, row: PlanRow | None, boundary: Boundary | str | None, *, on_demand: bool
    ) -> None:
        if row is None:
            self.display = False
            return
        self.display = True
        self.update(pane_text(self.app, row, boundary, on_demand=on_demand))


def pane_text(app: Any, row: PlanRow, boundary: Boundary | str | None, *, on_demand: bool) -> Text:
    """`boundary` is the read boundary, READING, an error text, or None (not read yet)."""
    if row.target is None or not row.changed:
        return toned(app, "not changed by the plan: no message at a boundary", "text-muted")
    if boundary is None:
        if on_demand:
            return Text(f"b reads the first message after the reset (offset {row.target})")
        return Text(f"the messages at offset {row.target} are not read yet")
    if boundary == READING:
        return toned(app, f"reading the message at offset {row.target}…", "text-muted")
    if isinstance(boundary, str):
        return toned(app, f"could not read: {boundary}", "text-error")
    lines = _message_lines(
        app, "first", boundary.request.target, boundary.first, boundary.first_note
    )
    if boundary.request.skips or boundary.last_note is not None:
        before = boundary.request.target - 1
        lines += _message_lines(app, "skipped", before, boundary.last_skipped, boundary.last_note)
    if boundary.from_slave:
        lines[0].append_text(toned(app, " (read from the slave: master down)", "text-muted"))
    return Text("\n").join(lines)


def _message_lines(
    app: Any, label: str, offset: int, view: MessageView | None, note: str | None
) -> list[Text]:
    head = toned(app, f"{label} @{offset}", "text-accent", bold=True)
    if view is None:
        # The reason on a line of its own: it is what the operator reads, and it is long.
        tone = "text-warning" if note and not note.startswith("nothing after") else "text-muted"
        return [head, Text("  ").append_text(toned(app, note or "unknown", tone))]
    when = local_time(view.store_time_ms, short=True) or "store time unknown"
    # What tells one message from another first: the rest is cut first at 80 columns.
    head.append(f"  {when}")
    if view.keys:
        head.append(f"  keys {' '.join(view.keys)}")
    if view.tags:
        head.append(f"  tags {view.tags}")
    head.append(f"  {view.size} B")
    return [head, Text("  " + view.body_text)]


def detail_text(app: Any, boundary: Boundary) -> Text:
    """Both messages in full (ids, hosts, properties), for the details dialog."""
    r = boundary.request
    blocks = [
        _detail(
            app, "first consumed after the reset", r.target, boundary.first, boundary.first_note
        )
    ]
    if r.skips or boundary.last_note is not None:
        blocks.append(
            _detail(app, "last skipped", r.target - 1, boundary.last_skipped, boundary.last_note)
        )
    if boundary.from_slave:
        blocks.append(toned(app, "read from the slave: its master does not answer", "text-muted"))
    return Text("\n\n").join(blocks)


def _detail(app: Any, title: str, offset: int, view: MessageView | None, note: str | None) -> Text:
    head = toned(app, f"{title} · offset {offset}", "text-accent", bold=True)
    if view is None:
        return Text("\n").join([head, Text(f"  {note or 'unknown'}")])
    size = f"{view.size} bytes" + (f" ({view.compression} compressed)" if view.compression else "")
    rows = [
        ("stored", local_time(view.store_time_ms) or "unknown"),
        ("born", f"{local_time(view.born_time_ms) or 'unknown'} at {view.born_host}"),
        ("keys", " ".join(view.keys) or "-"),
        ("tags", view.tags or "-"),
        ("msg id", view.msg_id or "- (the producer set none)"),
        ("offset id", view.offset_msg_id),
        ("size", size),
        ("reconsume", str(view.reconsume_times)),
        ("body", view.body_text),
    ]
    return Text("\n").join([head, *(Text(f"  {k:<10} {v}") for k, v in rows)])
