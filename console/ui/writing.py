"""The console as a door of the apply session: its events as messages, its confirmation from the
confirm dialog.

A session runs on a worker's thread and event loop (console/services/apply/session.py). What it
tells the door comes to the screen as `SessionTold` messages (`posted`), handled on the UI
thread in the order they were sent. When it needs the operator's answer, `DialogConfirm` posts
`ConfirmationAsked` and the session waits until the screen's dialog sets the reply; a screen that
goes away first answers None (`abandon`), so a session never waits on a dialog nobody will show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from textual.message import Message

from console.ui.messages import ConfirmationAsked, SessionTold

if TYPE_CHECKING:
    from console.services.apply.events import SessionEvent, Tell
    from console.services.apply.write_check import Confirmation, WriteCheck

Post = Callable[[Message], object]


def posted(post: Post) -> Tell:
    """A session's events posted to a screen, each as a `SessionTold` message."""

    def tell(event: SessionEvent) -> None:
        post(SessionTold(event))

    return tell


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
