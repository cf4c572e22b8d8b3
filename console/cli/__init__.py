"""`rmq-console`: the console (no subcommand) and its non-interactive commands.

Each module in COMMAND_MODULES adds its subcommands through `register(subparsers)`. Modules keep
heavy imports (Textual, PySpark) inside their handlers so that `rmq-console lag` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import NoReturn

from console import __version__
from console.cli.target import add_target_arguments
from console.config import ConfigError
from console.redact import redact_text
from console.rocketmq.errors import RocketMQError

COMMAND_MODULES = (
    "console.cli.browse",
    "console.cli.sandbox",
    "console.cli.plan",
    "console.cli.messages",
    "console.cli.apply",
    "console.cli.spark",
    "console.cli.walkthrough",
)

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """Bad input is one line on stderr, as for every other error (README), not argparse's
    usage block followed by the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rmq-console",
        description="Terminal operations console for Apache RocketMQ consumer offsets. "
        "Without a command, opens the console.",
    )
    parser.add_argument("--version", action="version", version=f"rmq-console {__version__}")
    add_target_arguments(parser)
    parser.set_defaults(handler=_open_console)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _open_console(args: argparse.Namespace) -> int:
    from console.cli.target import console_target
    from console.ui.main import open_console

    return open_console(*console_target(args))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except (ConfigError, RocketMQError, ValueError) as exc:
        print(redact_text(f"rmq-console: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
