"""`rmq-console`: the console (no subcommand) and its non-interactive commands.

Each module in COMMAND_MODULES adds its subcommands through `register(subparsers)`; COMMANDS says
which module has which command, so that a command loads its own module only (`rmq-console lag`
does not import the planner's, the writer's or the console's code), and `--version` or the console
none of them. `--help` and a command nobody knows load them all, so that argparse lists them.
Modules keep heavy imports (Textual, PySpark) inside their handlers.

What a handler raises is sorted here. The errors an operator can act on (`console.errors.UserError`
and its family: config, spec, journal, bad files, refusals; and the wire client's RocketMQError)
are one line on stderr and exit 2. Anything else is a bug: one line saying so and where its
traceback was written, exit 70 (console/cli/crash.py).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from console import __version__
from console.cli.arguments import add_target_arguments
from console.cli.ending import ANSWERS_ONCE, end_now
from console.cli.pandas_refused import refuse_pandas
from console.errors import UserError
from console.redact import redact_text
from console.rocketmq.errors import RocketMQError

#: Each command module, in the order `--help` lists them, with the commands it registers.
COMMANDS = {
    "console.cli.browse": ("clusters", "brokers", "topics", "groups", "lag"),
    "console.cli.sandbox": ("sandbox", "demo"),
    "console.cli.plan": ("snapshot", "plan"),
    "console.cli.messages": ("message",),
    "console.cli.apply": ("apply", "undo", "resume"),
    "console.cli.history": ("history",),
    "console.cli.verify": ("verify",),
    "console.cli.spark": ("spark",),
    "console.cli.walkthrough": ("walkthrough",),
}
COMMAND_MODULES = tuple(COMMANDS)

Handler = Callable[[argparse.Namespace], int]
#: The exit code of a command whose reader closed the pipe, as a shell gives one killed by
#: SIGPIPE (128 + 13).
PIPE_CLOSED = 141
#: What a command may raise for the operator to act on: one line, exit 2.
USER_ERRORS: tuple[type[Exception], ...] = (UserError, RocketMQError)


class _Parser(argparse.ArgumentParser):
    """Bad input is one line on stderr, as for every other error (README), not argparse's
    usage block followed by the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Unsure(Exception):
    """The scout could not read the command line: the whole parser will say why."""


class _Scout(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Unsure(message)


def command_modules(argv: Sequence[str]) -> tuple[str, ...]:
    """The command modules the parser needs for `argv`: the named command's, none when no
    command is named (the console, `--version`), all for help or a command nobody knows."""
    scout = _Scout(add_help=False)
    scout.add_argument("--debug", action="store_true")
    add_target_arguments(scout)
    scout.add_argument("command", nargs="?")
    scout.add_argument("rest", nargs=argparse.REMAINDER)
    try:
        known, unknown = scout.parse_known_args(list(argv))
    except _Unsure:
        return COMMAND_MODULES
    if known.command is None:
        asks_help = any(a in ("-h", "--help") for a in unknown)
        return COMMAND_MODULES if asks_help else ()
    for module, commands in COMMANDS.items():
        if known.command in commands:
            return (module,)
    return COMMAND_MODULES


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The whole command line; with `modules`, the commands of those modules only."""
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
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


def _open_console(args: argparse.Namespace) -> int:
    # deferred: the console's entry and its network process's proxy, off every command's start
    from console.cli.target import console_target
    from console.ui.main import open_console

    return open_console(*console_target(args))


def run() -> int:
    """The program's entry (`rmq-console`, `python -m console`): this process is the console's
    alone, so pyarrow goes without pandas (console/cli/pandas_refused.py), and a read ends it
    once its answer is written (console/cli/ending.py)."""
    refuse_pandas()
    argv = sys.argv[1:]
    args = parse(argv)
    code = dispatch(args, argv)
    if code == PIPE_CLOSED:
        # What is still buffered goes nowhere, so that the interpreter's last flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if getattr(args, ANSWERS_ONCE, False):
        end_now(code)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return dispatch(parse(argv), argv)


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser(command_modules(argv)).parse_args(argv)


def dispatch(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the parsed command; sort what it raises (module docstring)."""
    handler: Handler = args.handler
    try:
        return handler(args)
    except USER_ERRORS as exc:
        print(redact_text(f"rmq-console: error: {_one_line(exc)}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of the output went away (`lag -g G | head`): it read what it wanted.
        return PIPE_CLOSED
    except Exception as exc:
        # deferred: the crash report (traceback, platform), for a bug only
        from console.cli.crash import debugging, report_bug

        return report_bug(exc, argv, debug=debugging(getattr(args, "debug", False)))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split("\n")).strip() or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
