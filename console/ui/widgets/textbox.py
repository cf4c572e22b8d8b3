"""A text box whose editing keys act in typing order.

Textual inserts a printable key in the box that received it, at once, but runs the box's
bindings (ctrl+u, enter, the arrows, backspace ...) only once the key has come back up to the
app, after the box has read the keys behind it. Keys that arrive in one read (an SSH session,
a paste, tmux send-keys) are then applied out of order: ctrl+u, 2, enter typed in one go types
2, clears it, and submits an empty box. A `TextBox` runs the editing bindings Textual's `Input`
comes with (clearing, deleting, moving the cursor) as it reads them, as it does a printable key.

Enter, and a key a subclass binds itself (the filter box's enter, which hands the focus back to
the table), still go up to the app: what they do may move the focus, and the keys behind them
must follow it there (console.ui.typeahead). The box has applied every key before them by then.
So does a key read after the box lost the focus.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import Input

#: The actions of Input's own bindings that stay in the box: editing and moving the cursor.
_EDITING = frozenset(b.action for b in Binding.make_bindings(Input.BINDINGS)) - {"submit"}


class TextBox(Input):
    async def _on_key(self, event: events.Key) -> None:
        bindings = self._bindings.key_to_bindings.get(event.key, ())
        if (
            not event.is_printable
            and self.has_focus
            and bindings
            and all(b.action in _EDITING and not b.priority for b in bindings)
        ):
            for binding in bindings:
                if await self.app.run_action(binding.action, self):
                    event.stop()
                    event.prevent_default()
                    return
        await super()._on_key(event)
