"""The top-level ``drivemetrics`` command: its static table agrees with the domain modules."""

from __future__ import annotations

import argparse
import importlib

import pytest

from drivemetrics.cli import COMMANDS, build_parser, main


@pytest.mark.parametrize("module", sorted({module for module, _ in COMMANDS.values()}))
def test_table_lists_exactly_the_commands_each_module_registers(module):
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    assert set(sub.choices) == {name for name, (owner, _) in COMMANDS.items() if owner == module}


def test_top_level_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name, (_, help_text) in COMMANDS.items():
        assert name in out
        assert help_text.split()[0] in out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["no-such-command"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err


def test_running_command_gets_its_real_parser():
    parser = build_parser("road-eval")
    args = parser.parse_args(["road-eval", "--gt", "d", "--pred", "r"])  # old spellings: hidden aliases
    assert callable(args.func)
    assert args.space == "perspective"


def test_demo_out_that_is_a_file_is_one_line_naming_it(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    assert main(["demo", "--out", str(target)]) == 2
    assert "`--out` " in capsys.readouterr().err
    assert target.read_text() == "mine"
