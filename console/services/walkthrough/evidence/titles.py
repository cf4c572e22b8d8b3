"""The evidence a walkthrough may show, by name, with the title each is shown under: what a
walkthrough file is checked against (its `evidence:` lists name these)."""

from __future__ import annotations

from collections.abc import Mapping

TITLES: Mapping[str, str] = {
    "group": "The group now",
    "clients": "Consumers online",
    "reset-path": "How an apply moves the offsets",
    "rates": "Produce and consume rates",
    "source-group": "Offsets to copy",
    "retry-backlog": "Retry and dead-letter backlog",
    "history": "Snapshots and applies of the group",
    "moved-on": "Did the consumers move on",
    "time-per-queue": "The time, queue by queue",
    "stuck": "Stuck queues",
    "message-at-committed": "The message it cannot get past",
    "skip-span": "What the skip gives up",
}
