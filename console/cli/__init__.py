"""`rmq-console`: the console (no subcommand) and its non-interactive commands.

Each module in COMMAND_MODULES adds its subcommands through `register(subparsers)`. Modules keep
heavy imports (Textual, PySpark) inside their handlers so that `rmq-console lag` starts fast.

What a handler raises is sorted here. The errors an operator can act on (`console.errors.UserError`
and its family: config, spec, journal, bad files, refusals; and the wire client's RocketMQError)
are one line on stderr and exit 2. Anything else is a bug: one line saying so and where its
traceback was written, exit 70 (console/cli/crash.py).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import NoReturn

from console import __version__
from console.cli.crash import debugging, report_bug
from console.cli.target import add_target_arguments, console_target
from console.errors import UserError
from console.redact import redact_text
from console.rocketmq.errors import RocketMQError
from console.ui.main import open_console

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
#: What a command may raise for the operator to act on: one line, exit 2.
USER_ERRORS: tuple[type[Exception], ...] = (UserError, RocketMQError)


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
    parser.add_argument(
        "--debug",
        action="store_true",
        help="print the traceback of a bug instead of writing it to a file "
        "(also RMQ_CONSOLE_DEBUG=1)",
    )
    add_target_arguments(parser)
    parser.set_defaults(handler=_open_console)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _open_console(args: argparse.Namespace) -> int:
    return open_console(*console_target(args))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except USER_ERRORS as exc:
        print(redact_text(f"rmq-console: error: {_one_line(exc)}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        return report_bug(exc, argv, debug=debugging(getattr(args, "debug", False)))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split("\n")).strip() or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
