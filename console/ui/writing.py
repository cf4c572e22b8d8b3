"""The console as a door of the apply session: its events as messages, its confirmation from the
confirm dialog.

A session runs on a worker's thread and event loop (console/services/apply/session.py). What it
tells the door comes to the screen as messages (`PostedEvents`), handled on the UI thread in the
order they were sent. When it needs the operator's answer, `DialogConfirm` posts
`ConfirmationAsked` and the session waits until the screen's dialog sets the reply; a screen that
goes away first answers None (`abandon`), so a session never waits on a dialog nobody will show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from textual.message import Message

from console.ui.messages import (
    ApplyChecked,
    ApplyConfirmed,
    ApplyDeclined,
    ApplyFinished,
    ApplyProgressed,
    ApplyRefused,
    ConfirmationAsked,
    PlanProgressed,
)

if TYPE_CHECKING:
    from console.domain.journal import Journal
    from console.services.apply.progress import ApplyProgress
    from console.services.apply.session import Confirmation, WriteCheck
    from console.services.infra.spark_jobs import JobProgress

Post = Callable[[Message], object]


class PostedEvents:
    """A session's events (an `ApplyEvents`) posted to a screen as messages."""

    def __init__(self, post: Post) -> None:
        self._post = post

    def checking(self) -> None:
        return None  # the screen showed it when it started the session

    def planning(self, progress: JobProgress) -> None:
        self._post(PlanProgressed(progress))

    def checked(self, check: WriteCheck) -> None:
        self._post(ApplyChecked(check))

    def confirmed(self, accept_drift: bool) -> None:
        self._post(ApplyConfirmed(accept_drift))

    def declined(self) -> None:
        self._post(ApplyDeclined())

    def writing(self, progress: ApplyProgress) -> None:
        self._post(ApplyProgressed(progress))

    def applied(self, journal: Journal, journal_path: str) -> None:
        self._post(ApplyFinished(journal, journal_path))

    def refused(self, reasons: tuple[str, ...]) -> None:
        self._post(ApplyRefused(reasons))


class DialogConfirm:
    """A session's `confirm`, answered by the screen's confirm dialog."""

    def __init__(self, post: Post) -> None:
        self._post = post
        self._pending: Future[Confirmation | None] | None = None

    async def __call__(self, check: WriteCheck) -> Confirmation | None:
        reply: Future[Confirmation | None] = Future()
        self._pending = reply
        self._post(ConfirmationAsked(check, reply))
        return await asyncio.wrap_future(reply)

    def abandon(self) -> None:
        """Nobody will answer (the screen is gone): the session takes it as cancelled."""
        answer(self._pending, None)


def answer(reply: Future[Confirmation | None] | None, confirmation: Confirmation | None) -> None:
    """Give the session waiting on `reply` its answer, once."""
    if reply is not None and not reply.done():
        reply.set_result(confirmation)
