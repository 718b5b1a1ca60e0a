"""KITTI object label / result / calibration files and the velodyne -> camera -> image projections."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.detection.io import (
    KittiObjects,
    box3d_corners,
    camera_to_image,
    format_kitti_objects,
    parse_kitti_objects,
    read_kitti_object_calib,
    read_kitti_object_folder,
    read_kitti_objects,
    velodyne_to_camera,
    velodyne_to_image,
    write_kitti_object_calib,
    write_kitti_object_folder,
    write_kitti_objects,
)

LABEL = (
    "Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01\n"
    "DontCare -1 -1 -10 503.89 169.71 590.61 190.13 -1 -1 -1 -1000 -1000 -1000 -10\n"
)


def test_parse_label_columns():
    objs = parse_kitti_objects(LABEL)
    assert objs.type == ["Pedestrian", "DontCare"]
    assert objs.score is None
    np.testing.assert_array_equal(objs.bbox[0], [712.40, 143.00, 810.73, 307.92])
    np.testing.assert_array_equal(objs.dimensions[0], [1.89, 0.48, 1.20])  # h, w, l
    np.testing.assert_array_equal(objs.location[1], [-1000, -1000, -1000])
    assert objs.alpha[1] == -10
    assert objs.occluded[1] == -1
    assert objs.rotation_y[0] == 0.01


def test_result_round_trip(tmp_path):
    objs = parse_kitti_objects(LABEL).with_score([0.75, 0.125])
    path = tmp_path / "res" / "000000.txt"
    write_kitti_objects(path, objs)
    back = read_kitti_objects(path, with_score=True)
    assert back.type == objs.type
    np.testing.assert_array_equal(back.to_array(), objs.to_array())
    text = format_kitti_objects(parse_kitti_objects(LABEL))
    assert text.splitlines()[0] == LABEL.splitlines()[0]
    assert text.splitlines()[1] == (
        "DontCare -1.00 -1 -10.00 503.89 169.71 590.61 190.13 -1.00 -1.00 -1.00 -1000.00 -1000.00 -1000.00 -10.00"
    )
    assert [p.name for p in path.parent.iterdir()] == ["000000.txt"]  # no temp file left


@pytest.mark.parametrize(
    ("text", "with_score", "message"),
    [
        ("Car 0 0 0 1 2 3 4 1 1 1 0 0 5\n", None, r"f\.txt:1: expected 15 \(label\) or 16"),
        (LABEL + "Car 0 0 0 1 2 3 4 1 1 1 0 0 5 0 0.9\n", None, r"f\.txt:3: expected 15 columns"),
        ("\n" + LABEL.replace("0.48", "abc"), False, r"f\.txt:2: columns 2\.\.15 must be numbers"),
        (LABEL, True, r"f\.txt:1: expected 16 columns for a result"),
        ("Car 0 0 0 1 2 3 4 1 1 1 0 0 nan 0\n", False, r"f\.txt:1: non-finite"),
    ],
)
def test_malformed_lines_name_file_and_line(text, with_score, message):
    with pytest.raises(ValueError, match=message):
        parse_kitti_objects(text, source="f.txt", with_score=with_score)


def test_folder_reading_and_missing_frames(tmp_path):
    (tmp_path / "000001.txt").write_text(LABEL)
    (tmp_path / "000000.txt").write_text("")
    frames = read_kitti_object_folder(tmp_path)
    assert list(frames) == ["000000", "000001"]
    assert len(frames["000000"]) == 0
    assert len(frames["000001"]) == 2
    with pytest.raises(FileNotFoundError, match="000002"):
        read_kitti_object_folder(tmp_path, ["000002"])
    with pytest.warns(UserWarning, match="1 frame"):
        out = read_kitti_object_folder(tmp_path, ["000002", "000001"], with_score=False, missing="warn")
    assert len(out["000002"]) == 0
    with pytest.raises(FileNotFoundError):
        read_kitti_object_folder(tmp_path / "nope")
    with pytest.raises(FileNotFoundError):
        read_kitti_objects(tmp_path / "nope.txt")


def _assert_same_frames(got: dict[str, KittiObjects], want: dict[str, KittiObjects]) -> None:
    assert list(got) == list(want)
    for name in want:
        assert got[name].type == want[name].type, name
        np.testing.assert_array_equal(got[name].to_array(), want[name].to_array(), err_msg=name)


@pytest.mark.parametrize("with_score", [False, True])
def test_folder_round_trip(tmp_path, with_score):
    source = tmp_path / "source"
    source.mkdir()
    (source / "000000.txt").write_text(LABEL)
    (source / "000001.txt").write_text("")
    (source / "000007.txt").write_text(LABEL.splitlines()[0] + "\n")
    first = read_kitti_object_folder(source, with_score=False)
    if with_score:
        first = {name: objs.with_score(np.linspace(0.9, 0.1, len(objs))) for name, objs in first.items()}
    copy = tmp_path / "out" / "data"  # created, parents included
    write_kitti_object_folder(copy, first)
    assert sorted(p.name for p in copy.iterdir()) == ["000000.txt", "000001.txt", "000007.txt"]  # no temp file
    second = read_kitti_object_folder(copy, with_score=with_score)
    _assert_same_frames(second, first)
    write_kitti_object_folder(copy, second)  # overwriting gives the same files again
    _assert_same_frames(read_kitti_object_folder(copy, with_score=with_score), first)
    if not with_score:
        assert (copy / "000000.txt").read_text() == format_kitti_objects(parse_kitti_objects(LABEL))


def test_folder_writing_errors(tmp_path):
    objs = parse_kitti_objects(LABEL)
    for name in ("", "..", "a/b", "a\\b"):
        with pytest.raises(ValueError, match="`frames` keys"):
            write_kitti_object_folder(tmp_path / "out", {name: objs})
    bad = parse_kitti_objects(LABEL)
    bad.type[1] = "Dont Care"
    with pytest.raises(ValueError, match=r"frames\['000001'\].*one word"):
        write_kitti_object_folder(tmp_path / "out", {"000000": objs, "000001": bad})
    assert not (tmp_path / "out").exists()  # nothing written
    (tmp_path / "file.txt").write_text("")
    with pytest.raises(ValueError, match="`folder`"):
        write_kitti_object_folder(tmp_path / "file.txt", {"000000": objs})


def test_empty_frame_shapes():
    empty = KittiObjects.empty(with_score=True)
    assert len(empty) == 0
    assert empty.bbox.shape == (0, 4)
    assert empty.score.shape == (0,)
    assert format_kitti_objects(empty) == ""


@pytest.fixture(scope="module")
def calib0(fixtures_dir):
    path = fixtures_dir / "kitti_object" / "calib" / "000000.txt"
    if not path.is_file():
        pytest.skip("kitti_object calib fixtures absent")
    return read_kitti_object_calib(path)


def test_calibration_keys_and_projection(calib0):
    assert calib0["P2"].shape == (3, 4)
    assert calib0["R0_rect"].shape == (3, 3)
    assert calib0["Tr_velo_to_cam"].shape == (3, 4)
    assert calib0["Tr_imu_to_velo"].shape == (3, 4)
    # reference notes 1.2: velodyne (10, 0, -1) -> rect (-0.0255, 0.8875, 9.6726) -> uv (606.637, 245.221), w 9.6776
    point = torch.tensor([[10.0, 0.0, -1.0]], dtype=torch.float64)
    rect = velodyne_to_camera(point, calib0)
    torch.testing.assert_close(rect, torch.tensor([[-0.0255, 0.8875, 9.6726]], dtype=torch.float64), atol=5e-5, rtol=0)
    uv, w = velodyne_to_image(point, calib0)
    torch.testing.assert_close(uv, torch.tensor([[606.637, 245.221]], dtype=torch.float64), atol=5e-4, rtol=0)
    assert w.item() == pytest.approx(9.6776, abs=5e-5)


def test_projected_box_extent(calib0):
    """Label 000000 projects to [710.44, 144.00, 820.29, 307.59] with P2 alone (reference notes 1.2)."""
    objs = parse_kitti_objects(LABEL)
    corners = box3d_corners(
        torch.from_numpy(objs.dimensions[:1]),
        torch.from_numpy(objs.location[:1]),
        torch.from_numpy(objs.rotation_y[:1]),
    )
    uv, _ = camera_to_image(corners[0], calib0["P2"])
    extent = torch.cat([uv.min(0).values, uv.max(0).values])
    torch.testing.assert_close(
        extent, torch.tensor([710.44, 144.00, 820.29, 307.59], dtype=torch.float64), atol=6e-3, rtol=0
    )


def test_calib_round_trip_and_errors(tmp_path, calib0):
    path = tmp_path / "c.txt"
    write_kitti_object_calib(path, calib0)
    back = read_kitti_object_calib(path)
    for key, value in calib0.items():
        torch.testing.assert_close(back[key], value, rtol=1e-12, atol=0)
    (tmp_path / "bad.txt").write_text("P0: 1 2 3\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: P0 must have 12 values"):
        read_kitti_object_calib(tmp_path / "bad.txt")
    with pytest.raises(FileNotFoundError):
        read_kitti_object_calib(tmp_path / "none.txt")


def test_corners_geometry():
    corners = box3d_corners(torch.tensor([[2.0, 1.0, 4.0]]), torch.tensor([[1.0, 1.5, 10.0]]), torch.tensor([0.0]))[0]
    assert corners[:4, 1].eq(1.5).all()
    assert corners[4:, 1].eq(-0.5).all()
    assert corners[:, 0].min() == -1
    assert corners[:, 0].max() == 3
    assert corners[:, 2].min() == 9.5
    assert corners[:, 2].max() == 10.5


def _float_parse(text: str) -> tuple[list[str], np.ndarray]:
    """A file's types and numbers by ``str.split`` and ``float``, the definition the folder reader must match."""
    rows = [line.split() for line in text.splitlines() if line.split()]
    return [r[0] for r in rows], np.array([[float(v) for v in r[1:]] for r in rows]).reshape(len(rows), 15)


@pytest.mark.parametrize(
    ("name", "end"), [("Car", ""), ("Car", "\t "), ("Car", "\r"), ("Car", "\x0b\x1f"), ("Caré", "")]
)
def test_folder_reading_parses_like_float_per_file(tmp_path, name, end):
    # many-digit numbers (rounding), tabs, blank lines, empty files; a line end of "\r" or "\x0b" (a line break to
    # str.splitlines) or a non-ASCII type sends the folder down the file-by-file path: the values must not change
    rng = np.random.default_rng(0)
    texts = {}
    for i in range(40):
        lines = []
        for _ in range(i % 4):
            numbers = " ".join(repr(float(v)) for v in rng.normal(0, 100, 14)) + " 0.1234567890123456789e-3"
            lines.append(f"{name if i == 7 else 'Car'}\t{numbers}{end if i == 7 else ''}\n\n")
        texts[f"{i:06d}"] = "".join(lines)
    for name, text in texts.items():
        (tmp_path / f"{name}.txt").write_bytes(text.encode("utf-8"))
    frames = read_kitti_object_folder(tmp_path, with_score=True)
    assert list(frames) == list(texts)
    for name, text in texts.items():
        types, values = _float_parse(text)
        assert frames[name].type == types, name
        np.testing.assert_array_equal(frames[name].to_array(), values, err_msg=name)


def test_folder_reading_names_the_bad_file(tmp_path):
    for i in range(5):
        (tmp_path / f"{i:06d}.txt").write_text(LABEL.replace("0.48", "inf") if i == 3 else LABEL)
    with pytest.raises(ValueError, match=r"000003\.txt:1: non-finite"):
        read_kitti_object_folder(tmp_path)
    (tmp_path / "000003.txt").write_text(LABEL + LABEL.splitlines()[0] + " 0.5\n")
    with pytest.raises(ValueError, match=r"000003\.txt:3: expected 15 columns"):
        read_kitti_object_folder(tmp_path)


def _decimal_tokens(rng: np.random.Generator, count: int) -> list[str]:
    """Plain decimals as KITTI files hold them (any sign, 0 to 16 digits, 0 to 9 after the point) and the other
    spellings ``float`` accepts."""
    tokens = []
    for _ in range(count):
        whole = str(rng.integers(0, 10 ** int(rng.integers(1, 9))))
        fraction = "".join(map(str, rng.integers(0, 10, int(rng.integers(0, 10)))))
        token = whole + ("." + fraction if fraction or rng.random() < 0.2 else "")
        tokens.append(("-" if rng.random() < 0.4 else "") + token)
    return [
        *tokens,
        "-0.00", "0", "-0", "1.", ".5", "-.5", "+2.5", "1_000.5", "007.50", "1e3", "-2.5E-4",
        "999999999999999", "9999999999999999", "0.000000000000001", "0.1234567890123456789", "123456789012345.6",
        "-1000.00", "1241.00", "-10.000000", "3.14159265358979",
    ]  # fmt: skip


def test_folder_reading_parses_plain_decimals_bit_for_bit_as_float(tmp_path):
    # the folder reader reads plain decimals a column at a time (mantissa / 10**k) and sends any other spelling to
    # float: every value must have float's bits (-0.0 included)
    tokens = _decimal_tokens(np.random.default_rng(3), 20_000)
    tokens += ["0"] * (-len(tokens) % 15)
    rows = np.array(tokens, dtype=object).reshape(-1, 15)
    per_file = np.array_split(np.arange(len(rows)), 50)
    for i, lines in enumerate(per_file):
        text = "".join("Car " + " ".join(rows[r]) + "\n" for r in lines)
        (tmp_path / f"{i:06d}.txt").write_text(text)
    frames = read_kitti_object_folder(tmp_path, with_score=True)
    got = np.concatenate([f.to_array() for f in frames.values()]).reshape(-1)
    want = np.array([float(t) for t in rows.reshape(-1)])
    assert got.view(np.int64).tolist() == want.view(np.int64).tolist()
    assert np.signbit(got[rows.reshape(-1) == "-0.00"]).all()
