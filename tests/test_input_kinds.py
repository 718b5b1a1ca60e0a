"""Issue 35: a folder given where a command expects a file (or a file where it expects a folder) is refused in one
line naming the option, before any work, by one check for every command (``check_input_kinds``)."""

from __future__ import annotations

import argparse

import pytest

from drivemetrics.cli import COMMANDS, build_parser, main

#: options that name something a command reads; each must be declared with ``add_input`` (and so checked)
INPUT_OPTIONS = {"--gt", "--pred", "--det", "--data", "--results", "--calib", "--input", "--list"}
NOT_DATASET_COMMANDS = {"demo", "config"}


def command_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def declared_inputs() -> list[tuple[str, str, str]]:
    """``(command, flag, kind)`` for every input option of every registered command."""
    rows = []
    for command in sorted(COMMANDS):
        kinds = command_parser(command).get_default("input_kinds") or {}
        rows += [(command, flag, kind) for flag, kind in kinds.values()]
    return rows


def _argv(command: str, tmp_path, swapped: str | None) -> list[str]:
    """The command's required options with valid-looking paths; ``swapped`` given the wrong kind of path."""
    (tmp_path / "a_folder").mkdir(exist_ok=True)
    (tmp_path / "a_file.txt").write_text("x\n")
    parser = command_parser(command)
    kinds = dict((parser.get_default("input_kinds") or {}).values())
    argv = [command]
    for action in parser._actions:
        flag = action.option_strings[0] if action.option_strings else None
        if flag is None or not (action.required or flag == swapped):
            continue
        if flag in kinds:
            want_folder = kinds[flag] == "folder"
            if flag == swapped:
                want_folder = not want_folder
            value = str(tmp_path / ("a_folder" if want_folder else "a_file.txt"))
        else:
            value = str(action.choices[0]) if action.choices else "x"
        argv += [flag, value]
    return argv


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - NOT_DATASET_COMMANDS))
def test_every_input_option_is_declared(command):
    parser = command_parser(command)
    kinds = {flag for flag, _ in (parser.get_default("input_kinds") or {}).values()}
    options = {
        s
        for a in parser._actions
        for s in a.option_strings
        if s in INPUT_OPTIONS and s not in getattr(a, "hidden_aliases", ())  # an old spelling parses as its option
    }
    assert options <= kinds, f"{command}: {sorted(options - kinds)} not declared with add_input"


@pytest.mark.parametrize(("command", "flag", "kind"), [row for row in declared_inputs() if row[2] != "file or folder"])
def test_the_wrong_kind_of_path_is_one_line_naming_the_option(command, flag, kind, tmp_path, capsys):
    assert main(_argv(command, tmp_path, swapped=flag)) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    expected = "is a folder; expected a file" if kind == "file" else "is not a folder; expected a folder"
    assert lines[0].startswith(f"drivemetrics {command}: error: `{flag}` "), lines[0]
    assert expected in lines[0]


def test_declared_inputs_cover_the_commands_that_read_files():
    commands = {command for command, _, _ in declared_inputs()}
    assert commands == set(COMMANDS) - NOT_DATASET_COMMANDS
    assert ("culane-eval", "--gt", "folder") in declared_inputs()
    assert ("tusimple-eval", "--gt", "file") in declared_inputs()


def test_a_missing_path_is_left_to_the_reader(tmp_path, capsys):
    missing = str(tmp_path / "nowhere.json")
    assert main(["tusimple-eval", "--gt", missing, "--pred", missing, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "nowhere.json" in err
    assert "is a folder" not in err
