"""Outputs never overwrite inputs; writes are atomic; undecodable images name their file."""

from __future__ import annotations

import json
import os
import stat

import pytest

from drivemetrics._internal.files import atomic_open, atomic_write_text, check_output_path, load_image, read_text


def test_output_equal_to_an_input_file_is_refused(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text("x")
    with pytest.raises(ValueError, match=r"`--json` .*pred\.json is one of the inputs"):
        check_output_path(pred, input_files=[pred], option="--json")
    # the same file through a symbolic link and a relative path
    link = tmp_path / "link.json"
    link.symlink_to(pred)
    with pytest.raises(ValueError, match="--json"):
        check_output_path(link, input_files=[pred], option="--json")
    with pytest.raises(ValueError, match="--json"):
        check_output_path(tmp_path / "sub" / ".." / "pred.json", input_files=[pred], option="--json")
    assert check_output_path(tmp_path / "scores.json", input_files=[pred]) == (tmp_path / "scores.json").resolve()


def test_output_folder_equal_to_an_input_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match="is the input folder"):
        check_output_path(tmp_path / "res" / ".", input_dirs=[tmp_path / "res"], option="--output")
    assert check_output_path(tmp_path / "bev", input_dirs=[tmp_path / "res"])


def test_atomic_write_replaces_or_keeps_the_old_file(tmp_path):
    path = tmp_path / "out" / "scores.json"
    atomic_write_text(path, json.dumps({"a": 1}))
    assert json.loads(path.read_text()) == {"a": 1}

    def interrupted_write(exc: BaseException, mode: str) -> None:
        with atomic_open(path, mode) as stream:
            stream.write('{"half": ' if mode == "w" else b"x")
            raise exc

    with pytest.raises(RuntimeError):
        interrupted_write(RuntimeError("interrupted"), "w")
    assert json.loads(path.read_text()) == {"a": 1}  # the old file, whole
    assert os.listdir(path.parent) == ["scores.json"]  # no temporary left behind
    with pytest.raises(KeyboardInterrupt):
        interrupted_write(KeyboardInterrupt(), "wb")
    assert os.listdir(path.parent) == ["scores.json"]


def test_truncated_png_names_the_file(tmp_path):
    import numpy as np
    from PIL import Image

    path = tmp_path / "um_road_000001.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8)).save(path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match=r"um_road_000001\.png: cannot decode the result PNG"):
        load_image(path, what="result PNG")
    with pytest.raises(FileNotFoundError, match="missing"):
        load_image(tmp_path / "missing.png")


def test_output_file_inside_an_input_folder(tmp_path):
    results = tmp_path / "results"
    (results / "sub").mkdir(parents=True)
    frame = results / "um_road_000000.png"
    frame.write_bytes(b"png")
    # named like the files the command reads: refused, existing or not, at any depth
    for path in (frame, results / "new.png", results / "sub" / "x.PNG"):
        with pytest.raises(ValueError, match=r"`--json` .* inside the input folder .* named like the files read"):
            check_output_path(path, input_dirs=[results], read_suffixes=(".png", ".txt"), option="--json")
    # another kind of file may be written (and replaced) there
    (results / "scores.json").write_text("{}")
    assert check_output_path(results / "scores.json", input_dirs=[results], read_suffixes=(".png",))
    # kinds unknown: an existing file is refused, a new one allowed
    with pytest.raises(ValueError, match="existing file inside the input folder"):
        check_output_path(frame, input_dirs=[results])
    assert check_output_path(results / "new.json", input_dirs=[results])
    # an output folder inside an input folder is allowed (it only receives new files)
    assert check_output_path(results / "sub", input_dirs=[results])
    assert frame.read_bytes() == b"png"


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_write_gives_a_new_file_the_mode_of_a_plain_open(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "new.json", "{}")
        with open(tmp_path / "plain.json", "w") as stream:
            stream.write("{}")
    finally:
        os.umask(old)
    new_mode = stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode)
    assert new_mode == 0o666 & ~umask
    assert new_mode == stat.S_IMODE(os.stat(tmp_path / "plain.json").st_mode)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o664, 0o640, 0o755])
def test_atomic_write_keeps_the_mode_of_the_replaced_file(tmp_path, mode):
    path = tmp_path / "scores.json"
    path.write_text("{}")
    os.chmod(path, mode)
    atomic_write_text(path, '{"a": 1}')
    assert json.loads(path.read_text()) == {"a": 1}
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    with atomic_open(path, "wb") as stream:
        stream.write(b"{}")
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert os.listdir(tmp_path) == ["scores.json"]


def _read_detection_list(path):
    from drivemetrics.detection.evaluate import read_list

    return read_list(str(path))


def _reader(module: str, name: str, **kwargs):
    def read(path):
        import importlib

        return getattr(importlib.import_module(module), name)(path, **kwargs)

    return read


@pytest.mark.parametrize(
    ("read", "good"),
    [
        (_reader("drivemetrics.lane.io", "read_tusimple_json"), '{"raw_file": "a.jpg", "lanes": []}\n'),
        (_reader("drivemetrics.lane.io", "read_culane_list"), "/driver_1/a/00000.jpg\n"),
        (_reader("drivemetrics.lane.io", "read_culane_lines"), "100 580 120 560\n"),
        (_reader("drivemetrics.lane.io", "read_culane_file"), "100 580 120 560\n"),
        (_reader("drivemetrics.roadnet.io", "read_roadtracer_graph"), "0 0\n1 1\n\n0 1\n"),
        (_reader("drivemetrics.roadnet.io", "read_geojson"), '{"type": "FeatureCollection", "features": []}'),
        (_reader("drivemetrics.geometry.calib", "read_kitti_calib", required=("P0",)), "P0: 1 0 0 0 0 1 0 0 0 0 1 0\n"),
        (_reader("drivemetrics.detection.io", "read_kitti_objects"), ""),
        (_reader("drivemetrics.detection.io", "read_kitti_object_calib"), "P0: 1 0 0 0 0 1 0 0 0 0 1 0\n"),
        (_read_detection_list, "000000\n"),
    ],
    ids=[
        "tusimple",
        "culane-list",
        "culane-lines",
        "culane-file",
        "roadtracer",
        "geojson",
        "calib",
        "kitti-objects",
        "kitti-object-calib",
        "detection-list",
    ],
)
def test_invalid_utf8_names_the_file_line_and_offset(tmp_path, read, good):
    path = tmp_path / "input.txt"
    path.write_bytes(good.encode() + b"\xff\xfe junk\n")
    with pytest.raises(ValueError, match="not valid UTF-8") as info:
        read(path)
    message = str(info.value)
    assert not isinstance(info.value, UnicodeDecodeError)
    line = good.count("\n") + 1
    assert message.startswith(f"{path}:{line}: ")
    assert f"offset {len(good.encode())}" in message
    assert "0xff" in message


def test_read_text_translates_newlines_like_open(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("é\r\nb\rc\n".encode())
    assert read_text(path) == "é\nb\nc\n"
    with pytest.raises(FileNotFoundError, match="list file not found"):
        read_text(tmp_path / "missing.txt", what="list file")


def test_every_file_written_by_the_package_goes_through_the_atomic_writers():
    """No module but ``_internal/files.py`` writes a file (``savefig(path)``, ``Image.save``, ``write_text``, ...)."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "drivemetrics"
    writers = {"savefig", "save", "write_text", "write_bytes", "imwrite", "dump"}
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).as_posix() == "_internal/files.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in writers:
                found.append(f"{path.relative_to(package)}:{node.lineno} .{node.func.attr}(")
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "open"
                and any(isinstance(a, ast.Constant) and str(a.value)[:1] in "wax" for a in node.args[1:2])
            ):
                found.append(f"{path.relative_to(package)}:{node.lineno} open(..., write mode)")
    assert found == []
