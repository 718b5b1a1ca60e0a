"""Outputs never overwrite inputs; writes are atomic; undecodable images name their file."""

from __future__ import annotations

import json
import os
import stat

import pytest

from drivemetrics._files import atomic_open, atomic_write_text, check_output_path, load_image


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
