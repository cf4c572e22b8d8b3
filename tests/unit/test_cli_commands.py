"""The command line loads the module of the command it runs, and only that one."""

from __future__ import annotations

import argparse

import pytest

from console import cli


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


@pytest.mark.parametrize("module", cli.COMMAND_MODULES)
def test_each_module_registers_the_commands_the_table_names(module: str) -> None:
    assert _commands(cli.build_parser((module,))) == set(cli.COMMANDS[module])


def test_no_command_is_named_by_two_modules() -> None:
    named = [c for commands in cli.COMMANDS.values() for c in commands]
    assert len(named) == len(set(named))


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (["lag", "-g", "billing", "--namesrv", "h:1"], ("console.cli.browse",)),
        (["--namesrv", "h:1", "groups", "--json"], ("console.cli.browse",)),
        # An option's value that is also a command's name is the option's.
        (["--cluster", "plan", "lag", "-g", "g"], ("console.cli.browse",)),
        (["--debug", "--timeout", "3", "apply", "P1"], ("console.cli.apply",)),
        (["spark", "up", "--help"], ("console.cli.spark",)),
        # No command: the console, or --version, loads none.
        ([], ()),
        (["--version"], ()),
        (["--cluster", "prod"], ()),
        # Help and what the scout cannot read load every module: argparse lists or says.
        (["--help"], cli.COMMAND_MODULES),
        (["-h"], cli.COMMAND_MODULES),
        (["lagg", "-g", "g"], cli.COMMAND_MODULES),
        (["--timeout"], cli.COMMAND_MODULES),
        (["--timeout", "soon", "lag"], cli.COMMAND_MODULES),
    ],
)
def test_the_command_named_picks_its_module(argv: list[str], modules: tuple[str, ...]) -> None:
    assert cli.command_modules(argv) == modules


def test_a_typo_is_told_with_every_command_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["lagg", "-g", "g"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'lagg'" in err
    assert "'walkthrough'" in err
    assert "'lag'" in err


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for commands in cli.COMMANDS.values():
        for command in commands:
            assert f"    {command} " in out or f"    {command}\n" in out, command
