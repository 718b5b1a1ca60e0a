"""The fast PNG path decodes exactly what Pillow decodes, and declines every format it does not take."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from PIL import Image

from drivemetrics._internal.png import decode_png_array, fast_decoder, png_header

pytest.importorskip("pyspng")


def _png_bytes(array: np.ndarray, mode: str, **save: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array, mode=mode).save(buf, format="PNG", **save)
    return buf.getvalue()


@pytest.mark.parametrize(("mode", "shape"), [("L", (37, 53)), ("RGB", (37, 53, 3)), ("RGBA", (37, 53, 4))])
@pytest.mark.parametrize("interlace", [False, True])
def test_decodes_like_pillow(tmp_path, mode, shape, interlace):
    array = np.random.default_rng(0).integers(0, 256, size=shape, dtype=np.uint8)
    path = tmp_path / "x.png"
    # Pillow writes interlaced PNGs only through optimize/interlace flags of some versions: write and check
    path.write_bytes(_png_bytes(array, mode, **({"interlace": 1} if interlace else {})))
    decoded = decode_png_array(path)
    assert decoded is not None
    assert decoded.dtype == np.uint8
    np.testing.assert_array_equal(decoded, np.asarray(Image.open(path)))
    np.testing.assert_array_equal(decoded, array)


def test_header_fields(tmp_path):
    data = _png_bytes(np.zeros((7, 11, 3), np.uint8), "RGB")
    assert png_header(data) == (11, 7, 8, 2)
    assert png_header(b"not a png at all, not at all") is None


def test_declines_other_formats(tmp_path):
    palette = Image.fromarray(np.zeros((5, 6), np.uint8), mode="L").convert("P")
    buf = io.BytesIO()
    palette.save(buf, format="PNG")
    assert png_header(buf.getvalue()).colour_type == 3
    assert decode_png_array(tmp_path / "p.png", buf.getvalue()) is None
    sixteen = io.BytesIO()
    Image.fromarray(np.full((5, 6), 40000, np.uint16)).save(sixteen, format="PNG")
    assert png_header(sixteen.getvalue()).bit_depth == 16
    assert decode_png_array(tmp_path / "s.png", sixteen.getvalue()) is None
    grey_alpha = _png_bytes(np.zeros((5, 6, 2), np.uint8), "LA")
    assert decode_png_array(tmp_path / "la.png", grey_alpha) is None


def test_damaged_and_missing_files_fall_back(tmp_path):
    data = _png_bytes(np.zeros((40, 40), np.uint8), "L")
    assert decode_png_array(tmp_path / "t.png", data[:60]) is None  # truncated: Pillow reports it
    assert decode_png_array(tmp_path / "missing.png") is None


def test_without_pyspng_pillow_decodes(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspng", None)  # import fails
    assert fast_decoder() == "pillow"
    path = tmp_path / "x.png"
    path.write_bytes(_png_bytes(np.ones((3, 4), np.uint8), "L"))
    assert decode_png_array(path) is None


def test_kitti_road_readers_equal_with_and_without_pyspng(fixtures_dir, monkeypatch):
    from drivemetrics.road import io as road_io

    gt = next((fixtures_dir / "kitti_road" / "training" / "gt_image_2").glob("um_road_*.png"))
    fast_red, fast_blue = road_io.read_gt_red_blue(gt)
    with_pillow = np.asarray(Image.open(gt).convert("RGB"))
    np.testing.assert_array_equal(fast_red, with_pillow[..., 0])
    np.testing.assert_array_equal(fast_blue, with_pillow[..., 2])
    monkeypatch.setitem(sys.modules, "pyspng", None)
    slow_red, slow_blue = road_io.read_gt_red_blue(gt)
    np.testing.assert_array_equal(slow_red, fast_red)
    np.testing.assert_array_equal(slow_blue, fast_blue)
