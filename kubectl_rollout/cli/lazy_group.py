"""A click group that imports a command's module only when that command runs.

Importing every command module up front costs more than half a second (the
kubernetes client alone), which ``--help``, ``version --client`` and every TAB
press would pay. Each command is registered by name with the place it lives
(``"module:attribute"``) and its one-line summary, so the top-level help and
the completion of command names are answered without importing any of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click
from click.shell_completion import CompletionItem

from kubectl_rollout.cli.options import Group, accept_connection_flags


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives (``"package.module:attribute"``) and the first paragraph of its help."""

    location: str
    summary: str

    def load(self) -> click.Command:
        module_name, _, attribute = self.location.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.location} is not a click command")
        return command

    def short_help(self, limit: int) -> str:
        """The summary shortened as click shortens a command's help (first sentence, at most ``limit``)."""
        return click.Command(None, help=self.summary).get_short_help_str(limit)


class LazyGroup(Group):
    """A ``Group`` whose commands come from a registry and are imported on first use."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            command = self.lazy_commands[cmd_name].load()
            # Registered under the registry's name, whatever the command calls itself.
            self.commands[cmd_name] = command
        found = self.commands.get(cmd_name)
        if found is not None:
            accept_connection_flags(found)
        return found

    def _visible(self, ctx: click.Context) -> list[str]:
        """Names of the commands to show; a command not imported yet is visible (the registry has no hidden ones)."""
        return [name for name in self.list_commands(ctx) if name not in self.commands or not self.commands[name].hidden]

    def _short_help(self, name: str, limit: int) -> str:
        """What ``get_short_help_str(limit)`` gives, without importing a command that is not loaded yet."""
        if name in self.commands:
            return self.commands[name].get_short_help_str(limit)
        return self.lazy_commands[name].short_help(limit)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Laid out as click.Group.format_commands does, from the registry's summaries.
        names = self._visible(ctx)
        if names:
            limit = formatter.width - 6 - max(len(name) for name in names)
            with formatter.section("Commands"):
                formatter.write_dl([(name, self._short_help(name, limit)) for name in names])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        items = [
            CompletionItem(name, help=self._short_help(name, 45))
            for name in self._visible(ctx)
            if name.startswith(incomplete)
        ]
        # Options of the group itself, as click.Command.shell_complete offers them.
        items.extend(click.Command.shell_complete(self, ctx, incomplete))
        return items
