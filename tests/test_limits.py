"""drivemetrics._internal.limits and the checks built on it (issue 24): documented, overridable limits; one contract."""

from __future__ import annotations

import json
import math
import random
import zlib

import numpy as np
import pytest
import torch

from drivemetrics._internal.limits import (
    ENV_VAR,
    Limits,
    check_graph_extent,
    get_limits,
    json_depth,
    load_json,
    png_size,
    set_limits,
)


def test_defaults_overrides_and_the_environment(monkeypatch):
    assert get_limits() == Limits()
    with set_limits(max_lane_points=5):
        assert get_limits().max_lane_points == 5
        with set_limits(max_lane_points=7, max_json_depth=3):
            assert (get_limits().max_lane_points, get_limits().max_json_depth) == (7, 3)
        assert get_limits().max_lane_points == 5
    assert get_limits() == Limits()
    monkeypatch.setenv(ENV_VAR, "max_png_pixels=100, max-graph-nodes=1_000")
    assert (get_limits().max_png_pixels, get_limits().max_graph_nodes) == (100, 1000)
    monkeypatch.setenv(ENV_VAR, "max_pngs=1")
    with pytest.raises(ValueError, match=f"{ENV_VAR}: expected NAME=VALUE"):
        get_limits()
    with pytest.raises(ValueError, match="must be >= 1"):
        set_limits(max_lane_points=0)


def test_json_depth_skips_strings_and_load_json_refuses_what_costs_more_than_its_bytes():
    assert json_depth('{"a": [[1], "[[[[", {"b": "\\"]]"}]}') == 3
    assert load_json('{"lanes": [[1, 2.5]]}', "f.json:1") == {"lanes": [[1, 2.5]]}
    for text, words in [
        ("[" * 100_000 + "]" * 100_000, "f.json:1: JSON nested 100000 levels deep, more than max_json_depth=64"),
        ("[1" + "0" * 400 + "]", "f.json:1: a JSON integer of 401 digits"),
        ("[1e400]", "f.json:1: the JSON number 1e400 overflows a float"),
        ("[NaN]", "f.json:1: NaN is not a finite number"),
        ("[1, ", "f.json:1: not valid JSON"),
    ]:
        with pytest.raises(ValueError, match=r"^f\.json:1: ") as info:
            load_json(text, "f.json:1")
        assert str(info.value).startswith(words), str(info.value)
    # past Python's recursion limit: still one ValueError
    with set_limits(max_json_depth=200_000), pytest.raises(ValueError, match=r"f\.json: JSON nested too deeply"):
        load_json("[" * 100_000 + "]" * 100_000, "f.json")


def _png_header_only(path, width, height):
    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)))


def test_a_png_bomb_is_refused_from_its_header_without_decoding(tmp_path, monkeypatch):
    from PIL import ImageFile

    from drivemetrics._internal.files import load_image

    path = tmp_path / "um_road_000000.png"
    _png_header_only(path, 12_000, 12_000)
    assert png_size(path) == (12_000, 12_000)

    def no_decoding(self):
        raise AssertionError("decoded before the size check")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    with pytest.raises(ValueError, match=r"um_road_000000\.png: the image declares 12000 x 12000 = 144,000,000 pixels"):
        load_image(path)


def test_culane_cost_is_bounded_by_the_canvas_and_far_points_draw_as_the_visible_part():
    from drivemetrics.lane.culane import lane_iou_matrix

    far = torch.tensor([[[[0.0, 0.0], [1e7, 1e7]]]], dtype=torch.float64)
    near = torch.tensor([[[[0.0, 0.0], [2000.0, 2000.0]]]], dtype=torch.float64)  # the same line on the canvas
    other = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]], dtype=torch.float64)
    assert lane_iou_matrix(far, near)[0, 0, 0].item() == pytest.approx(1.0)
    assert lane_iou_matrix(far, other)[0, 0, 0].item() == 0.0
    huge = torch.tensor([[[[-1e12, 300.0], [1e12, 300.0]]]], dtype=torch.float64)  # a horizontal line
    row = torch.tensor([[[[-10.0, 300.0], [2000.0, 300.0]]]], dtype=torch.float64)
    with pytest.raises(ValueError, match="max_abs_coordinate"):  # issue 51: refused by default, in one line
        lane_iou_matrix(huge, row)
    with set_limits(max_abs_coordinate=10**13):  # admitted: drawn as its visible part, the cost still the canvas's
        assert lane_iou_matrix(huge, row)[0, 0, 0].item() == pytest.approx(1.0)


def test_culane_reader_limits_name_the_file_and_line(tmp_path):
    from drivemetrics.lane.io import read_culane_lines, read_culane_list

    path = tmp_path / "a.lines.txt"
    path.write_text("1 2 3 4\n" + " ".join(["5 6"] * 11) + "\n")
    assert read_culane_lines(path).shape == (2, 11, 2)
    with set_limits(max_lane_points=10), pytest.raises(ValueError, match=r"a\.lines\.txt:2: 11 points in one lane"):
        read_culane_lines(path)
    with set_limits(max_lanes_per_frame=1), pytest.raises(ValueError, match=r"a\.lines\.txt: 2 lines \(lanes\)"):
        read_culane_lines(path)
    listing = tmp_path / "list.txt"
    listing.write_bytes(b"a.jpg\nb\x00.jpg\n")
    with pytest.raises(ValueError, match=r"list\.txt:2: a NUL byte"):
        read_culane_list(listing)


def test_tusimple_lanes_are_checked_against_the_labels_before_padding(tmp_path):
    from drivemetrics.lane.io import read_tusimple_json

    path = tmp_path / "pred.json"
    path.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [[1.0] * 57], "run_time": 1}) + "\n")
    assert read_tusimple_json(path).lanes.shape == (1, 1, 57)
    with pytest.raises(ValueError, match=r"pred\.json:1: lanes\[0\] has 57 values but the labels' `h_samples` have"):
        read_tusimple_json(path, max_points=56)
    path.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [[1.0] * 3] * 5, "run_time": 1}) + "\n")
    with set_limits(max_lanes_per_frame=4), pytest.raises(ValueError, match=r"pred\.json:1: 5 lanes in one record"):
        read_tusimple_json(path)
    path.write_text('{"raw_file": "a.jpg", "lanes": [], "run_time": ' + "9" * 30 + "}\n")
    with pytest.raises(ValueError, match=r"pred\.json:1: a JSON integer of 30 digits"):
        read_tusimple_json(path)


def test_graph_reader_and_extent_limits_name_the_file(tmp_path):
    from drivemetrics.roadnet.io import read_graph

    path = tmp_path / "g.graph"
    path.write_text("0 0\n10 10\n\n0 7\n")
    with pytest.raises(ValueError, match=r"g\.graph: `edges` indices must lie in 0\.\.1"):
        read_graph(path)
    path.write_text("0 0\n10 10\n20 0\n\n0 1\n1 2\n")
    assert read_graph(path).number_of_nodes() == 3
    with set_limits(max_graph_nodes=2), pytest.raises(ValueError, match=r"g\.graph: 3 nodes in one graph"):
        read_graph(path)
    check_graph_extent(np.array([[0.0, 0.0], [32_768.0, 5.0]]), "g.graph")
    with pytest.raises(ValueError, match=r"g\.graph: the nodes span 1e\+300 x 1e\+300 px .*max_graph_extent"):
        check_graph_extent(np.array([[0.0, 0.0], [1e300, 1e300]]), "g.graph")


def test_graph_eval_set_is_typed_before_any_work():
    from drivemetrics.roadnet.cli import apply_settings

    assert apply_settings({}, ["opt_j.d_max=12.5"]) == {"opt_j": {"d_max": 12.5}}
    with pytest.raises(ValueError, match=r"`--set opt_j\.d_max=abc`: opt_j\.d_max must be a number"):
        apply_settings({}, ["opt_j.d_max=abc"])
    with pytest.raises(ValueError, match=r"opt_j has no option 'nope'"):
        apply_settings({}, ["opt_j.nope=1"])
    with pytest.raises(ValueError, match="finite"):
        apply_settings({}, ["opt_j.d_max=nan"])


def test_outputs_are_checked_writable_before_any_work(tmp_path):
    from drivemetrics._internal.files import check_output_path, check_writable

    with pytest.raises(ValueError, match=r"`--json` /proc/nonexistent/out\.json: cannot write there"):
        check_output_path("/proc/nonexistent/out.json", option="--json", is_folder=False)
    with pytest.raises(ValueError, match=r"`--json` .* is a folder; expected a file name"):
        check_output_path(tmp_path, option="--json", is_folder=False)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file; expected a folder"):
        check_writable(tmp_path / "f", option="--out", is_folder=True)
    check_writable(tmp_path / "new" / "deeper" / "scores.json", option="--json", is_folder=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # the probe leaves nothing behind


def test_cli_limit_option_raises_a_limit_for_the_command(tmp_path, capsys):
    from drivemetrics.cli import main

    for folder in ("gt", "pred"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.lines.txt").write_text(" ".join(f"{800 + k} {580 - 10 * k}" for k in range(20)) + "\n")
    args = ["culane-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred")]
    with set_limits(max_lane_points=10):
        assert main(args) == 2
        assert "max_lane_points=10" in capsys.readouterr().err
        assert main(["--limit", "max_lane_points=20", *args]) == 0
    assert "f1         1.000000" in capsys.readouterr().out
    assert main(["--limit", "max_lanes=3", *args]) == 2
    assert "--limit: expected NAME=VALUE" in capsys.readouterr().err


def test_calibration_errors_name_the_file(tmp_path):
    from drivemetrics.geometry.homography import image_from_road_calib_file

    calib = (
        "P2: 721.5 0 609.5 44.8 0 721.5 172.8 0.2 0 0 1 0.003\nR0_rect: 1 0 0 0 1 0 0 0 1\n"
        "Tr_cam_to_road: 0 0 0 0 0 0 0 0 0 0 0 0\n"
    )
    path = tmp_path / "um_000000.txt"
    path.write_text(calib)
    with pytest.raises(ValueError, match=r"um_000000\.txt: "):
        image_from_road_calib_file(path)
    path.write_text(calib.replace("Tr_cam_to_road: 0 0 0 0", "Tr_cam_to_road: nan 0 0 0"))
    with pytest.raises(ValueError, match=r"um_000000\.txt"):
        image_from_road_calib_file(path)


def test_physically_impossible_arguments_are_refused_up_front():
    from drivemetrics.attack.patch import PatchSpec, composite_patch
    from drivemetrics.lane.psld import psld

    z = torch.zeros(2, 101)
    with pytest.raises(ValueError, match="`speed` must be at most 350 m/s"):
        psld(z, z, speed=1e30)
    with pytest.raises(ValueError, match="PatchSpec `cell` 1e-09 m gives a texture of"):
        PatchSpec(cell=1e-9)
    with pytest.raises(ValueError, match="PatchSpec `length` must be finite"):
        PatchSpec(length=math.inf)
    frames, texture = torch.zeros(1, 3, 8, 8), torch.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="`image_from_texture` contains NaN"):
        composite_patch(frames, texture, torch.full((1, 3, 3), math.nan))


def test_psld_compute_before_update_is_nan_never_a_perfect_score():
    from drivemetrics.lane.psld import PSLD

    for aggregate in ("mean", "max"):
        with pytest.warns(UserWarning, match="before the ``update``"):
            assert math.isnan(PSLD(aggregate=aggregate).compute().item())


def test_load_json_fast_path_gives_the_checked_values():
    # without a long digit run or a 3-digit exponent the C decoder parses the numbers; with one, each number is
    # checked: both give json.loads' values, and long digits inside strings do not matter
    text = '{"token": "12345678901234567890123456789", "v": [1, -2.5, 3e99, 1.25e-7, 0.1, true, null]}'
    assert load_json(text, "f.json") == json.loads(text)
    slow = '{"v": [1, -2.5, 1e-100, 123456789012345678901.5]}'
    assert load_json(slow, "f.json") == json.loads(slow)
    assert load_json('{"a": "[[[", "b": [[NaN]]}', "f.json", allow_non_finite=True)["a"] == "[[["


def test_load_json_with_orjson_gives_the_standard_decoders_values_and_messages(monkeypatch):
    pytest.importorskip("orjson")
    from drivemetrics._internal import limits

    assert limits._fast_json_loads() is not None
    rng = random.Random(0)
    numbers = [rng.uniform(-1e3, 1e3) for _ in range(2000)] + [rng.lognormvariate(0, 30) for _ in range(2000)]
    texts = [repr(x) for x in numbers] + [f"{x:.20g}" for x in numbers] + [f"{x:.3e}" for x in numbers]
    text = '{"v": [' + ", ".join(texts) + '], "s": "caf\\u00e9", "k": {"a": 1, "a": 2}, "i": 9223372036854775807}'
    assert load_json(text, "f.json") == json.loads(text)  # every number rounded the same, last duplicate key wins
    for tricky in ('{"n": NaN}', '{"i": 18446744073709551616}', '{"s": "\\ud800"}', '{"a": [1, 2,]}'):
        monkeypatch.setenv("DRIVEMETRICS_FAST_JSON", "0")  # the standard decoder's outcome ...
        limits._fast_json_loads.cache_clear()
        try:
            expected: object = load_json(tricky, "f.json")
        except ValueError as err:
            expected = str(err)
        monkeypatch.delenv("DRIVEMETRICS_FAST_JSON")  # ... is orjson's (it refuses these, the standard path decides)
        limits._fast_json_loads.cache_clear()
        try:
            got: object = load_json(tricky, "f.json")
        except ValueError as err:
            got = str(err)
        assert got == expected, tricky


def _cpu_seconds(fn, text: str) -> float:
    import contextlib
    import time

    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        with contextlib.suppress(ValueError):
            fn(text, "bench.json")
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "hostile",
    [
        '"' + '\\"' * 500_000,  # an unterminated string of escaped quotes (quadratic before issue 51: 35 s for 128 KB)
        "[" + '"\\"' * 333_333,  # many unterminated strings, each starting after the last
        '"' + "\\\\" * 499_999 + "\\",  # escaped backslashes ending in a lone backslash
    ],
    ids=["escaped-quotes", "many-strings", "lone-backslash"],
)
def test_hostile_json_costs_what_valid_json_of_the_same_size_costs(hostile):
    # issue 51's benchmark row: 1 MB of hostile JSON within 2x the time of 1 MB of valid JSON
    import json

    from drivemetrics._internal.limits import load_json

    valid = json.dumps(
        [{"sample_token": f"t{i}", "pts": [[i * 0.5, 1.25], [2.5, 3.75]], "s": 'a"b'} for i in range(13_000)]
    )
    assert 0.9e6 < len(valid) < 1.1e6
    assert len(hostile) >= 1e6
    base = _cpu_seconds(load_json, valid)
    assert _cpu_seconds(load_json, hostile) <= 2 * base + 0.02, (base, hostile[:20])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_coordinate_check_passes_the_bound_and_tells_nan_inf_and_too_large_apart(kind):
    """``check_coordinates_within_limit`` (``validate_args``): values at the bound pass in its one-pass path; a NaN,
    an infinite and a too-large value each get their own message, wherever they sit among valid values."""
    from drivemetrics._internal.validation import check_coordinates_within_limit

    def array(*values: float):
        x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, 6.0], list(values)])
        return x if kind == "numpy" else torch.from_numpy(x)

    with set_limits(max_abs_coordinate=100):
        check_coordinates_within_limit(array(-100.0, 100.0, 0.0), "x")
        for values, message in (
            ((0.0, math.nan, 1e300), "`x` contains NaN coordinates"),
            ((math.inf, 0.0, 0.0), "`x` contains infinite coordinates"),
            ((0.0, -math.inf, math.nan), "`x` contains NaN coordinates"),
            ((0.0, 100.5, 0.0), r"`x`: the coordinate 100\.5 is larger than max_abs_coordinate=100"),
        ):
            with pytest.raises(ValueError, match=message):
                check_coordinates_within_limit(array(*values), "x")
        check_coordinates_within_limit(array(math.nan, 1.0, -1.0), "x", nan_ok=True)  # padding
        with pytest.raises(ValueError, match="larger than max_abs_coordinate"):
            check_coordinates_within_limit(array(math.nan, 101.0, -1.0), "x", nan_ok=True)
        check_coordinates_within_limit(np.zeros((0, 3)), "x")


def test_strings_dropped_by_a_split_where_there_are_no_escapes_as_by_the_regex():
    from drivemetrics._internal.limits import _STRING, _without_strings

    texts = [
        '{"lanes": [{"lane_id": "l0", "markers": [[1, 2]]}]}',
        '{"a": "[[[", "b": [1]}',
        '{"a": "unterminated [[[',  # the last string runs to the end: dropped
        '"', '""', 'a"b"c"d', '{"a": "x\\"]]", "b": "\\\\"}',  # escapes: the regex
    ]  # fmt: skip
    for text in texts:
        assert _without_strings(text) == _STRING.sub("", text), text
    assert json_depth('{"a": "[[[[", "b": [[1]]}') == 3
