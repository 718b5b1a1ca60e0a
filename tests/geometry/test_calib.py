import pytest
import torch

from drivemetrics.geometry import parse_kitti_calib, read_kitti_calib, stack_calibs

TEXT = """
# a comment line
P2: 1 2 3 4 5 6 7 8 9 10 11 12
R0_rect: 1 0 0 0 1 0 0 0 1

Tr_cam_to_road: 1 0 0 0.5 0 1 0 -1.6 0 0 1 0.25
extra: 3.5 -1e-3
"""


def test_parse_reshapes_row_major_and_skips_comments():
    calib = parse_kitti_calib(TEXT)
    assert set(calib) == {"P2", "R0_rect", "Tr_cam_to_road", "extra"}
    assert calib["P2"].shape == (3, 4)
    assert calib["P2"].dtype == torch.float64
    assert calib["P2"][1, 0].item() == 5.0  # row-major: second row starts with the 5th value
    assert calib["P2"][2, 3].item() == 12.0
    assert calib["Tr_cam_to_road"][1, 3].item() == -1.6
    torch.testing.assert_close(calib["R0_rect"], torch.eye(3, dtype=torch.float64))
    assert calib["extra"].tolist() == [3.5, -1e-3]


def test_parse_dtype():
    assert parse_kitti_calib(TEXT, dtype=torch.float32)["P2"].dtype == torch.float32


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("P2: 1 2 3", r"mem:1: P2 must have 12 values \(3 x 4\), got 3"),
        ("R0_rect: 1 2 3 4 5 6 7 8 9 10", r"R0_rect must have 9 values"),
        ("P2 1 2 3", r"mem:1: expected one `key: v1 v2 ...` per line"),
        ("P2: 1 2: 3", r"expected one `key: v1 v2 ...`"),
        ("\nP2: 1 2 x 4 5 6 7 8 9 10 11 12", r"mem:2: values of 'P2' must be numbers"),
        ("a: 1\na: 2", r"mem:2: key 'a' appears twice"),
        ("P0: 1 2 3 4 5 6 7 8 9 10 11 12", r"missing calibration key\(s\) P2, R0_rect"),
    ],
)
def test_parse_errors_name_line_and_key(text, match):
    with pytest.raises(ValueError, match=match):
        parse_kitti_calib(text, source="mem", required=("P2", "R0_rect"))


def test_read_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"calibration file not found"):
        read_kitti_calib(tmp_path / "nope.txt")


def test_read_default_requires_road_keys(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("P2: 1 2 3 4 5 6 7 8 9 10 11 12\n")
    with pytest.raises(ValueError, match=r"c.txt: missing calibration key\(s\) R0_rect, Tr_cam_to_road"):
        read_kitti_calib(path)


def test_read_real_kitti_road_file(fixtures_dir):
    calib = read_kitti_calib(fixtures_dir / "kitti_road/training/calib/um_000000.txt")
    for key in ("P0", "P1", "P2", "P3", "Tr_velo_to_cam", "Tr_imu_to_velo", "Tr_cam_to_road"):
        assert calib[key].shape == (3, 4)
    assert calib["R0_rect"].shape == (3, 3)
    # values from the file's text: P2 = 7.215377e+02 0 6.095593e+02 4.485728e+01 / ... ; Tr_cam_to_road[1, 3]
    assert calib["P2"][0, 0].item() == 721.5377
    assert calib["P2"][0, 3].item() == 44.85728
    assert calib["P2"][1, 2].item() == 172.854
    assert calib["Tr_cam_to_road"][1, 3].item() == -1.59713440191


def test_stack_calibs():
    a = parse_kitti_calib(TEXT)
    b = parse_kitti_calib(TEXT.replace("P2: 1", "P2: 100"))
    stacked = stack_calibs([a, b], "P2")
    assert stacked.shape == (2, 3, 4)
    assert stacked[1, 0, 0].item() == 100.0
    with pytest.raises(KeyError, match="calibration 1 has no key 'P9'"):
        stack_calibs([{"P9": torch.zeros(3, 4)}, a], "P9")
    with pytest.raises(ValueError, match="empty"):
        stack_calibs([], "P2")
