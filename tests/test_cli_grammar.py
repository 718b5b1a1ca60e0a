"""One command grammar (issue 50), checked on the parser of every registered subcommand.

The rules are written in ``docs/pages/conventions.md`` ("Command grammar"); a command added to
``drivemetrics.cli.COMMANDS`` is checked here without an edit. Each rule has a deliberately broken parser that it
must reject (``test_the_rules_reject_a_broken_parser``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from drivemetrics._internal.options import add_compat, add_device, add_input, add_threads, device_name, hide_aliases
from drivemetrics._internal.progress import one_line_warnings
from drivemetrics.cli import COMMANDS, _add_global_options, build_parser, main

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Spellings the grammar replaces, with the name to use instead (a command may keep one as a hidden alias).
REPLACED = {
    "--data": "--gt",
    "--labels": "--gt",
    "--ground-truth": "--gt",
    "--annotations": "--gt",
    "--det": "--pred",
    "--dets": "--pred",
    "--results": "--pred",
    "--preds": "--pred",
    "--predictions": "--pred",
    "--submission": "--pred",
    "--input": "--pred",
    "--output": "--out",
    "--out-dir": "--out",
    "--write-stats": "--out",
    "--json-out": "--json",
    "--out-json": "--json",
    "--figure": "--figures",
    "--plots": "--figures",
    "--png": "--figures",
    "--jobs": "--workers",
    "--threads": "--workers",
    "--num-workers": "--workers",
    "--processes": "--workers",
    "--gpu": "--device",
    "--cuda": "--device",
    "--reference": "--compat",
    "--official": "--compat",
    "--preset": "--protocol",
}
#: Metavars of the output options.
OUTPUT_METAVARS = {"--json": "OUT", "--figures": "DIR", "--out": "DIR"}
#: ``*-eval`` commands whose benchmark has no released evaluation tool (so no ``--compat``), with the reason.
NO_RELEASED_TOOL: dict[str, str] = {}
#: ``*-eval`` commands without ``--device``: their scoring is host code by nature (no tensor path), with the reason.
#: Every other ``*-eval`` takes ``--device NAME`` (``add_device``), so a new command without it fails here.
HOST_ONLY: dict[str, str] = {
    "lanegraph-eval": "networkx graphs scored on the host (GEO / TOPO / APLS / SDA matching); torch only gathers "
    "the per-sample rows under torchrun",
}


def command_parser(name: str) -> argparse.ArgumentParser:
    """The real parser of subcommand ``name``, as ``drivemetrics NAME`` builds it."""
    parser = build_parser(name)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def visible(action: argparse.Action) -> list[str]:
    return [o for o in action.option_strings if o not in getattr(action, "hidden_aliases", ())]


def example_lines(name: str, parser: argparse.ArgumentParser) -> list[list[str]]:
    """The epilog's example commands, as argument lists after ``drivemetrics`` (comments and redirections cut)."""
    found = []
    for line in (parser.epilog or "").splitlines():
        line = line.split("#")[0].split(">")[0].strip()
        if line.startswith(f"drivemetrics {name}"):
            found.append(shlex.split(line)[1:])
    return found


def thread_pool(action: argparse.Action) -> bool:
    """Whether ``action`` is a thread pool's size (``add_threads``): ``--threads``, with ``--workers`` (which means
    processes everywhere, issue 46) kept only as its hidden old spelling."""
    return getattr(action, "pool", None) == "threads" and "--workers" in getattr(action, "hidden_aliases", ())


def grammar_problems(name: str, parser: argparse.ArgumentParser) -> list[str]:
    """Every rule of the grammar that ``parser`` (the subcommand ``name``) breaks, one line each."""
    problems = []
    by_flag = {flag: action for action in options(parser) for flag in visible(action)}
    for action in options(parser):
        flags = visible(action)
        help_text = action.help or ""
        if help_text == argparse.SUPPRESS or len(help_text) < 12 or re.fullmatch(r"default:?\s*\S+", help_text):
            problems.append(f"{name} {flags}: no help text that says what the option is ({help_text!r})")
        for flag in flags:
            if flag == "--threads" and getattr(action, "pool", None) == "threads":
                pass  # a thread pool is named --threads (alone or beside --workers): --workers means processes
            elif flag in REPLACED:
                problems.append(f"{name} {flag}: spell it {REPLACED[flag]} (keep {flag} as a hidden alias if needed)")
            if flag in OUTPUT_METAVARS and action.metavar != OUTPUT_METAVARS[flag]:
                problems.append(f"{name} {flag}: metavar {OUTPUT_METAVARS[flag]}, got {action.metavar}")
        for flag in ("--workers", "--threads"):
            if flag in flags and (action.default is not None or action.type is int):
                problems.append(f"{name} {flag}: default None (the auto policy), type positive_int")
        if "--compat" in flags and (
            tuple(action.choices or ()) != ("default", "reference") or action.default != "default"
        ):
            problems.append(f"{name} --compat: choices (default, reference), default 'default'")
    if name.endswith("-eval"):
        for flag in ("--gt", "--pred", "--json", "--workers"):
            if flag == "--workers" and "--threads" in by_flag and thread_pool(by_flag["--threads"]):
                continue  # its pool is threads: --threads (and --workers parses, hidden)
            if flag not in by_flag:
                problems.append(f"{name}: a dataset command takes {flag}")
        if "--compat" not in by_flag and name not in NO_RELEASED_TOOL:
            problems.append(f"{name}: no --compat (list it in NO_RELEASED_TOOL with the reason if no tool exists)")
        if "--device" in by_flag and name in HOST_ONLY:
            problems.append(f"{name}: takes --device but is listed in HOST_ONLY (remove it there)")
        elif "--device" not in by_flag and name not in HOST_ONLY:
            problems.append(
                f"{name}: no --device (add_device; or list it in HOST_ONLY with the reason if it has no tensor path)"
            )
    if "--device" in by_flag and by_flag["--device"].type is not device_name:
        problems.append(f"{name} --device: type device_name, via add_device")
    for flag in ("--verbose", "--limit"):
        if flag not in by_flag:
            problems.append(f"{name}: the global option {flag} is not accepted after the subcommand")
    examples = example_lines(name, parser)
    if not examples:
        problems.append(f"{name}: --help shows no example (epilog 'example:' with a `drivemetrics {name} ...` line)")
    for argv in examples:
        try:
            parser.parse_args(argv[1:])
        except SystemExit:
            problems.append(f"{name}: the example does not parse: {shlex.join(argv)}")
    return problems


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_follows_the_grammar(name, capsys):
    problems = grammar_problems(name, command_parser(name))
    capsys.readouterr()  # an example that did not parse printed its usage
    assert not problems, "\n".join(problems)


def test_the_top_level_help_shows_examples_that_parse(capsys):
    """``drivemetrics --help`` ends with examples too (the walk of issue 50 found it had none)."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text
    lines = [line.split("#")[0].strip() for line in text.split("examples:", 1)[1].splitlines()]
    found = [shlex.split(line)[1:] for line in lines if line.startswith("drivemetrics ")]
    assert len(found) >= 2, text
    for argv in found:
        command = next(token for token in argv if token in COMMANDS)
        if "--help" in argv:
            continue
        args = build_parser(command).parse_args(argv)
        assert args.command == command


def _broken() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="drivemetrics broken-eval")
    add_input(parser, "--data", "folder", help="folder with the ground truth")
    parser.add_argument("--results", help="default: found")
    parser.add_argument("--json", help="write the scores here")
    parser.add_argument("--workers", type=int, default=1, help="processes scoring the frames")
    parser.add_argument("--threads", type=lambda s: int(s), default=None, help="threads decoding the images")
    return parser


def test_a_dataset_command_without_device_fails_unless_listed_host_only(capsys):
    """Every ``*-eval`` takes ``--device`` (issue 50) or is in HOST_ONLY with a reason; a ``--device`` of its own
    making (not ``add_device``'s type) is refused too."""
    problems = "\n".join(grammar_problems("broken-eval", _broken()))
    assert "broken-eval: no --device" in problems, problems
    with_str = _broken()
    with_str.add_argument("--device", default="cpu", help="torch device of the kernels")
    assert "--device: type device_name" in "\n".join(grammar_problems("broken-eval", with_str))
    fixed = _broken()
    add_device(fixed, "torch device of the kernels")
    assert "--device" not in "\n".join(grammar_problems("broken-eval", fixed))
    host = _broken()
    HOST_ONLY["broken-eval"] = "test"
    try:
        assert "no --device" not in "\n".join(grammar_problems("broken-eval", host))
        add_device(host, "torch device of the kernels")
        assert "listed in HOST_ONLY" in "\n".join(grammar_problems("broken-eval", host))
    finally:
        del HOST_ONLY["broken-eval"]
    capsys.readouterr()


def test_every_dataset_command_takes_device_or_says_why_not():
    evals = sorted(name for name in COMMANDS if name.endswith("-eval"))
    assert set(HOST_ONLY) <= set(evals), sorted(set(HOST_ONLY) - set(evals))
    assert all(len(reason) > 20 for reason in HOST_ONLY.values())
    for name in evals:
        has = any("--device" in visible(a) for a in options(command_parser(name)))
        assert has or name in HOST_ONLY, name


def test_the_rules_reject_a_broken_parser(capsys):
    problems = "\n".join(grammar_problems("broken-eval", _broken()))
    capsys.readouterr()
    for expected in (
        "--data: spell it --gt",
        "['--results']: no help text",
        "--json: metavar OUT",
        "--workers: default None",
        "--threads: spell it --workers",  # not marked as a thread pool (add_threads)
        "takes --gt",
        "takes --pred",
        "no --compat",
        "--verbose is not accepted after the subcommand",
        "--help shows no example",
    ):
        assert expected in problems, (expected, problems)


def test_a_fixed_parser_passes_and_hidden_aliases_still_parse(capsys):
    parser = argparse.ArgumentParser(
        prog="drivemetrics fixed-eval", epilog="example:\n  drivemetrics fixed-eval --gt g --pred p --json out.json"
    )
    add_input(parser, "--gt", "folder", aliases=("--data",), required=True, help="folder with the ground truth")
    hide_aliases(
        parser.add_argument("--pred", "--results", required=True, help="folder with the predictions"), "--results"
    )
    parser.add_argument("--json", metavar="OUT", help="write the scores here")
    parser.add_argument("--workers", type=lambda s: int(s), default=None, help="processes scoring the frames")
    add_compat(parser, "the released tool")
    add_device(parser, "torch device of the kernels")
    _add_global_options(parser)
    checked = [p for p in grammar_problems("fixed-eval", parser) if "does not parse" not in p]
    assert checked == []
    args = parser.parse_args(["--data", "g", "--results", "p"])
    assert (args.gt, args.pred) == ("g", "p")
    assert "--data" not in parser.format_help()
    assert "--results" not in parser.format_help()
    capsys.readouterr()


def test_a_thread_pool_command_takes_threads_with_workers_as_its_hidden_alias(capsys):
    parser = argparse.ArgumentParser(
        prog="drivemetrics threaded-eval",
        epilog="example:\n  drivemetrics threaded-eval --gt g --pred p --threads 2",
    )
    add_input(parser, "--gt", "folder", required=True, help="folder with the ground truth")
    add_input(parser, "--pred", "folder", required=True, help="folder with the predictions")
    parser.add_argument("--json", metavar="OUT", help="write the scores here")
    add_threads(parser, "threads decoding the images")
    add_compat(parser, "the released tool")
    add_device(parser, "torch device of the kernels")
    _add_global_options(parser)
    assert grammar_problems("threaded-eval", parser) == []
    assert parser.parse_args(["--gt", "g", "--pred", "p", "--workers", "3"]).threads == 3  # the old spelling
    assert "--workers" not in parser.format_help()
    capsys.readouterr()


def test_global_options_after_the_subcommand_add_to_those_before(monkeypatch):
    import drivemetrics._internal.limits as limits

    seen = []
    original = limits.limit_options

    def recording(values):
        seen.append(list(values))
        return original([])

    monkeypatch.setattr(limits, "limit_options", recording)
    assert main(["--limit", "max_png_pixels=10", "config", "--limit", "max_lane_points=7", "--verbose"]) == 0
    assert seen == [["max_png_pixels=10", "max_lane_points=7"]]
    args = build_parser("config").parse_args(["config", "--verbose"])
    assert args.verbose is True


def test_a_warning_is_one_line_without_a_source_path():
    """While a command runs, Python's warning format is one line (the end-to-end case is the next test)."""
    with one_line_warnings("drivemetrics culane-eval"):
        text = warnings.formatwarning("3 prediction files are missing\n(counted as no lanes)", UserWarning, "x.py", 7)
    assert text == "drivemetrics culane-eval: warning: 3 prediction files are missing (counted as no lanes)\n"
    assert "x.py:7" in warnings.formatwarning("m", UserWarning, "x.py", 7)  # Python's format again afterwards


def test_a_command_warning_reaches_the_terminal_as_one_line(tmp_path):
    """kitti-object-eval warns about a frame without a result file: one line, no ``file.py:123: UserWarning``."""
    (tmp_path / "label_2").mkdir()
    (tmp_path / "data").mkdir()
    car = "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59"
    (tmp_path / "label_2" / "000000.txt").write_text(car + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "drivemetrics", "kitti-object-eval", "--gt", str(tmp_path / "label_2")]
    done = subprocess.run(
        [*command, "--pred", str(tmp_path / "data"), "--no-progress"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "warning" in line.lower()]
    assert len(lines) == 1, done.stderr
    assert "have no file in" in lines[0]
    assert lines[0].startswith("drivemetrics kitti-object-eval: warning: "), lines[0]
    assert not re.search(r"\.py:\d+|UserWarning", done.stderr), done.stderr


def _tusimple_files(tmp_path: Path) -> tuple[Path, Path]:
    h = list(range(160, 720, 10))
    lane = [300 + i for i in range(len(h))]
    gt = tmp_path / "label.json"
    gt.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [lane], "h_samples": h}) + "\n")
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [lane], "run_time": 10}) + "\n")
    return gt, pred


def test_tusimple_json_has_one_shape_whatever_the_flags(tmp_path, capsys):
    """A flag adds keys to the JSON; it never moves the keys written without it (``--per-image`` nested them)."""
    gt, pred = _tusimple_files(tmp_path)
    plain, per_image = tmp_path / "plain.json", tmp_path / "per_image.json"
    assert main(["tusimple-eval", "--gt", str(gt), "--pred", str(pred), "--json", str(plain), "--no-progress"]) == 0
    argv = ["tusimple-eval", "--gt", str(gt), "--pred", str(pred), "--json", str(per_image), "--per-image"]
    assert main([*argv, "--no-progress", "--workers", "1"]) == 0
    capsys.readouterr()
    flat, nested = json.loads(plain.read_text()), json.loads(per_image.read_text())
    assert set(flat) == {"Accuracy", "FP", "FN", "F1"}
    assert set(nested) == set(flat) | {"per_image"}
    assert {key: nested[key] for key in flat} == flat == {"Accuracy": 1.0, "FP": 0.0, "FN": 0.0, "F1": 1.0}


def test_a_command_prints_its_own_warnings_with_its_name():
    """The commands' own warning lines (not Python warnings) read like the Python ones: ``drivemetrics COMMAND:
    warning: ...`` (the walk of issue 50 found bare ``warning: ...`` lines from map-eval, graph-eval and
    kitti-object-eval); only a worker process (``_internal/pool.py``) prints ``warning: ...`` alone."""
    import contextlib
    import io

    from drivemetrics._internal.progress import one_line_warnings, warning_line

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with one_line_warnings("drivemetrics map-eval"):
            warning_line("1 prediction sample(s)  have no GT sample")
            warning_line("2 GT sample(s) count as empty", kind="note")
        warning_line("outside a command")
    assert err.getvalue().splitlines() == [
        "drivemetrics map-eval: warning: 1 prediction sample(s) have no GT sample",
        "drivemetrics map-eval: note: 2 GT sample(s) count as empty",
        "warning: outside a command",
    ]
    bare = re.compile(r"""print\(\s*f?["'](warning|note): """)
    allowed = {"drivemetrics/_internal/pool.py", "drivemetrics/_internal/progress.py"}
    found = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "drivemetrics").rglob("*.py"))
        if bare.search(path.read_text(encoding="utf-8")) and str(path.relative_to(REPO_ROOT)) not in allowed
    ]
    assert not found, f"print a command's warning with warning_line (drivemetrics._internal.progress): {found}"
