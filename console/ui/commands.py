"""The command palette's view of the current screen: every action it offers, by name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

# The palette opening itself is not worth offering inside the palette.
_SKIP = {"command_palette", "app.command_palette"}


class ScreenActions(Provider):
    def _actions(self) -> Iterator[tuple[str, str, Callable[[], Awaitable[bool]]]]:
        screen = self.screen
        seen: set[str] = set()
        for _key, active in screen.active_bindings.items():
            binding = active.binding
            if not active.enabled or binding.action in _SKIP or not binding.description:
                continue
            name = binding.description
            if name in seen:
                continue
            seen.add(name)
            shown_key = self.app.get_key_display(binding)
            help_text = f"key {shown_key}" + (f" · id {binding.id}" if binding.id else "")
            yield name, help_text, partial(self.app.run_action, binding.action, active.node)

    async def discover(self) -> Hits:
        for name, help_text, run in self._actions():
            yield DiscoveryHit(name, run, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, run in self._actions():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), run, help=help_text)


class WalkthroughCommands(Provider):
    """On a group's screen, each walkthrough by its title: `Walkthrough: Drain a flood`."""

    def _walkthroughs(self) -> Iterator[tuple[str, str, Callable[[], Awaitable[bool]]]]:
        screen = self.screen
        titles = getattr(screen, "walkthrough_titles", None)
        if titles is None:
            return
        for name, title in titles():
            action = f"walkthrough({name!r})"
            yield f"Walkthrough: {title}", name, partial(self.app.run_action, action, screen)

    async def discover(self) -> Hits:
        for text, name, run in self._walkthroughs():
            yield DiscoveryHit(text, run, help=f"rmq-console walkthrough {name}")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, name, run in self._walkthroughs():
            score = matcher.match(text)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(text), run, help=f"rmq-console walkthrough {name}"
                )
