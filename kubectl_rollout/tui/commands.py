"""The command palette (Ctrl+P): every key of the current screen that applies now, and the screens."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from kubectl_rollout.tui.screens import TOP_SCREENS


class ActionsProvider(Provider):
    def _actions(self) -> list[tuple[str, str, partial[Any]]]:
        screen = self.screen
        found: list[tuple[str, str, partial[Any]]] = []
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            if not active.enabled or not binding.description or binding.description in seen:
                continue
            if binding.action in ("command_palette", "quit"):
                continue
            seen.add(binding.description)
            run = partial(self.app.run_action, binding.action, active.node)
            found.append((binding.description, f"key {self.app.get_key_display(binding)}", run))
            del key
        for top in TOP_SCREENS:
            title = f"Go to {top.title}"
            if title not in seen:
                found.append((title, f"key {top.key}", partial(self.app.run_action, f"app.switch_mode('{top.mode}')")))
        found.append(("Quit (detach: jobs go on in the agent)", "key q", partial(self.app.run_action, "app.quit")))
        return found

    async def discover(self) -> Hits:
        for name, help_text, run in self._actions():
            yield DiscoveryHit(name, run, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, run in self._actions():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), run, help=help_text)
