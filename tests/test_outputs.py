"""Issue 51: one output rule for every command. An output (``--json``, ``--figures``, ``--write-stats``, ``--out``,
``--output``) that is, contains or sits inside an input (links resolved) is refused in one line naming both, before
any work, and the input is left as it was; a special file (a character device, a FIFO) is written into, never
replaced by the atomic rename.

The refusals are checked for every registered subcommand (built from its parser: each declared input becomes a
small file or folder), so a command added later gets the same test.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from drivemetrics.cli import COMMANDS, build_parser, main
from tests import cost_harness

OUTPUT_DESTS = ("json", "figures", "write_stats", "out", "output")


def _subparser(command: str):
    parser = build_parser(command)
    return parser._subparsers._group_actions[0].choices[command]


def _layout(command: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str, bool]], list]:
    """(input dest -> (flag, kind), [(output dest, flag, is_folder)], the other required actions)."""
    sub = _subparser(command)
    kinds = dict(sub.get_default("input_kinds") or {})
    outputs = []
    others = []
    for action in sub._actions:
        if action.dest in OUTPUT_DESTS or action.dest in (sub.get_default("output_flags") or {}):
            folder = action.dest != "json"
            outputs.append((action.dest, action.option_strings[0], folder))
        elif action.required and action.dest not in kinds:
            others.append(action)
    return kinds, outputs, others


CASES = [
    (command, dest, flag, folder)
    for command in COMMANDS
    for kinds, outputs, _ in [_layout(command)]
    if kinds
    for dest, flag, folder in outputs
]


def _argv(command: str, tmp: Path) -> tuple[list[str], dict[str, Path]]:
    """Arguments naming a small file or folder for each declared input (``inputs/<dest>``); outputs left out."""
    kinds, _, others = _layout(command)
    argv = [command]
    made: dict[str, Path] = {}
    for dest, (flag, kind) in kinds.items():
        path = tmp / "inputs" / dest
        path.parent.mkdir(exist_ok=True)
        if kind == "file":
            path.write_text("precious\n")
        else:
            path.mkdir()
            (path / "a.txt").write_text("precious\n")
        argv += [flag, str(path)]
        made[flag] = path
    for action in others:
        argv += [action.option_strings[0], str(action.choices[0] if action.choices else "x")]
    return argv, made


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(argv: list[str], capsys, words: list[str]) -> None:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(("command", "dest", "flag", "folder"), CASES, ids=lambda v: str(v))
def test_an_output_at_an_input_is_refused_before_any_work(command, dest, flag, folder, tmp_path, capsys):
    argv, inputs = _argv(command, tmp_path)
    before = _snapshot(tmp_path / "inputs")
    others = [a for a in argv if a != flag]  # an output that is also a required option (road-bev --output) is replaced
    if flag in argv:
        at = argv.index(flag)
        others = argv[:at] + argv[at + 2 :]
    for in_flag, path in inputs.items():
        # the input itself
        _refused([*others, flag, str(path)], capsys, [flag, in_flag, str(path)])
        # a symlink to the input
        link = tmp_path / f"link_{path.name}"
        link.symlink_to(path)
        _refused([*others, flag, str(link)], capsys, [flag, in_flag])
        if path.is_dir():  # inside an input folder: a new name, and one of its files
            _refused([*others, flag, str(path / "new_output")], capsys, [flag, in_flag, "inside"])
            _refused([*others, flag, str(path / "a.txt")], capsys, [flag, in_flag])
    if folder:  # an output folder that holds an input
        _refused([*others, flag, str(tmp_path / "inputs")], capsys, [flag, "contains the input"])
    assert _snapshot(tmp_path / "inputs") == before
    assert not list(tmp_path.rglob(".*.tmp"))


# ---------------------------------------------------------------------------------------------------------------
# special files: written into, never replaced


def _valid_runs() -> dict[str, object]:
    h = cost_harness
    return {
        "tusimple-eval": lambda t: h._tusimple(t)[1],
        "culane-eval": lambda t: h._culane(t, "800 580 810 450 820 300\n")[1],
        "graph-eval": lambda t: h._graph(t, h.ROAD_GRAPH)[1],
        "lanegraph-eval": lambda t: h._lanegraph(t)[1],
        "map-eval": lambda t: h._map_files(t, {})[1],
        "map-eval av2": lambda t: h._av2_files(t, {})[1],
        "openlanev2-eval": lambda t: h._olv2_files(t)[1],
        "road-eval": lambda t: h._road_eval(t)[1],
    }


def _with_json(argv: list[str], target: str) -> list[str]:
    if "--json" in argv:
        at = argv.index("--json")
        argv = argv[:at] + argv[at + 2 :]
    return [*argv, "--json", target]


def _null_device(path: Path) -> Path:
    try:
        os.mknod(
            path, stat.S_IFCHR | 0o666, os.makedev(1, 3)
        )  # a private /dev/null: a broken run cannot harm the real one
    except (OSError, AttributeError):
        pytest.skip("cannot create a character device here (needs CAP_MKNOD)")
    return path


@pytest.mark.parametrize("name", list(_valid_runs()))
def test_json_to_a_null_device_leaves_it_a_device(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()[name](tmp_path)
    null = _null_device(tmp_path / "null")
    assert main(_with_json(argv, str(null))) == 0, capsys.readouterr().err
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert not list(tmp_path.glob(".*.tmp"))


def test_json_to_a_fifo_is_written_into_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["tusimple-eval"](tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    assert main(_with_json(argv, str(fifo))) == 0, capsys.readouterr().err
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "Accuracy" in json.loads(got[0])


def test_a_250_character_json_name_is_accepted(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["tusimple-eval"](tmp_path)
    name = "s" * 245 + ".json"
    assert main(_with_json(argv, name)) == 0, capsys.readouterr().err
    assert "Accuracy" in json.loads((tmp_path / name).read_text())


def test_dev_stdout_is_written_not_replaced(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["tusimple-eval"](tmp_path)
    assert main(_with_json(argv, "/dev/stdout")) == 0
    assert '"Accuracy"' in capfd.readouterr().out
    assert Path("/dev/stdout").is_symlink() or not Path("/dev/stdout").is_file()
