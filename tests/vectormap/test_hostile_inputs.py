"""Issue 36 for the map readers and kernels: empty predictions are valid, limits, types and duplicates refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from drivemetrics._internal.limits import set_limits
from drivemetrics.polyline import chamfer_distance_matrix
from drivemetrics.vectormap import VectorMapAPMetrics
from drivemetrics.vectormap.evaluate import evaluate_map_files, evaluate_map_samples
from drivemetrics.vectormap.io import MapSample, read_map_gt, read_map_preds

GT_LINE = np.array([[0.0, 0.0], [0.0, 10.0]])


def test_chamfer_matrix_of_no_prediction_at_all():
    """``reshape(-1, 0, ...)`` of 0 elements used to raise: no line on one side gives an empty matrix."""
    target = torch.tensor([[[[0.0, 0.0], [1.0, 0.0]]]])  # (1, 1, 2, 2)
    out = chamfer_distance_matrix(
        torch.zeros(1, 0, 2, 2), torch.zeros(1, 0, dtype=torch.long), target, torch.tensor([[2]])
    )
    assert out.shape == (1, 0, 1)
    out = chamfer_distance_matrix(
        torch.zeros(0, 3, 2, 2), torch.zeros(0, 3, dtype=torch.long), target, torch.tensor([[2]])
    )
    assert out.shape == (0, 3, 1)


@pytest.mark.parametrize("protocol", ["default", "nuscenes-maptr", "av2-cvpr23"])
def test_no_predicted_line_scores_zero_in_every_protocol(protocol):
    gt = [MapSample("a", [GT_LINE], ["divider"]), MapSample("b", [GT_LINE + 5.0], ["boundary"])]
    for preds in ([], [MapSample("a"), MapSample("b")], [MapSample("zz", [GT_LINE], ["divider"], [0.5])]):
        result = evaluate_map_samples(gt, preds, protocol)
        classes = result.report["classes"]
        assert result.report["mAP"] == 0.0
        assert classes["divider"]["AP"] == 0.0
        assert classes["boundary"]["AP"] == 0.0
        # ped_crossing has no GT: NaN in the default protocol, 0 in the references
        assert math.isnan(classes["ped_crossing"]["AP"]) == (protocol == "default")
        assert result.missing_samples == [s.token for s in gt if s.token not in {p.token for p in preds}]


def test_the_metric_takes_a_batch_without_predictions():
    metric = VectorMapAPMetrics(protocol="default")
    target = torch.tensor([[[[0.0, 0.0], [0.0, 10.0]]]], dtype=torch.float64)  # (1, 1, 2, 2)
    none = torch.zeros(1, 0, 2, 2, dtype=torch.float64)
    empty_long = torch.zeros(1, 0, dtype=torch.long)
    preds = {"points": none, "lengths": empty_long, "labels": empty_long, "scores": torch.zeros(1, 0)}
    metric.update(preds, {"points": target, "lengths": torch.tensor([[2]]), "labels": torch.tensor([[0]])})
    out = metric.compute()
    assert out["map"].item() == 0.0
    assert out["ap_divider"].item() == 0.0


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _maptr_preds(vectors, token="a"):
    return {"results": [{"sample_token": token, "vectors": vectors}]}


def test_scores_must_be_numbers_in_unit_interval(tmp_path):
    for bad, words in (("0.5", "'0.5'"), (5.0, "5.0"), (True, "True"), (-0.1, "-0.1")):
        path = _write(
            tmp_path, "pred.json", _maptr_preds([{"pts": [[0, 0], [1, 1]], "type": 0, "confidence_level": bad}])
        )
        with pytest.raises(
            ValueError, match=r"pred\.json: sample a: vectors\[0\]\.confidence_level: .*\[0, 1\]"
        ) as err:
            read_map_preds(path)
        assert words in str(err.value)
    av2 = {"results": {"7": {"vectors": [[[0, 0], [1, 1]]], "scores": ["0.5"], "labels": [1]}}}
    with pytest.raises(ValueError, match=r"pred\.json: sample 7: scores\[0\]"):
        read_map_preds(_write(tmp_path, "pred.json", av2), "av2")


def test_coordinates_are_finite_and_within_the_limit_and_messages_name_the_file(tmp_path):
    for value in (1e308, 1e6, float("nan")):
        path = _write(
            tmp_path, "pred.json", _maptr_preds([{"pts": [[0, 0], [value, 1]], "type": 0, "confidence_level": 0.5}])
        )
        with pytest.raises(ValueError, match=r"pred\.json: sample a: vectors\[0\]\.pts: "):
            read_map_preds(path)
    av2 = {"results": {"7": {"vectors": [[[0, 0], [1e308, 1]]], "scores": [0.5], "labels": [1]}}}
    with pytest.raises(ValueError, match=r"pred\.json: sample 7: vectors\[0\]: the coordinate 1e\+308 m"):
        read_map_preds(_write(tmp_path, "pred.json", av2), "av2")
    with set_limits(max_map_coordinate=10**7):  # the same mechanism as every limit raises it
        assert read_map_preds(
            _write(
                tmp_path, "pred.json", _maptr_preds([{"pts": [[0, 0], [1e6, 1]], "type": 0, "confidence_level": 0.5}])
            )
        )


def test_sizes_are_limited(tmp_path):
    line = {"pts": [[0, 0], [1, 1]], "type": 0, "confidence_level": 0.5}
    with (
        set_limits(max_map_lines_per_frame=3),
        pytest.raises(ValueError, match="4 lines in one sample, more than max_map_lines_per_frame=3"),
    ):
        read_map_preds(_write(tmp_path, "pred.json", _maptr_preds([line] * 4)))
    with set_limits(max_map_line_points=3), pytest.raises(ValueError, match=r"vectors\[0\]\.pts: 4 points in one line"):
        read_map_preds(_write(tmp_path, "pred.json", _maptr_preds([{**line, "pts": [[0, 0]] * 4}])))
    with set_limits(max_map_frames=1), pytest.raises(ValueError, match=r"gt\.json: 2 samples in one file"):
        read_map_gt(_write(tmp_path, "gt.json", {"GTs": [{"sample_token": "a", "vectors": []}] * 2}))


def test_a_3d_line_is_never_cut_to_2d(tmp_path):
    gt = _write(
        tmp_path, "gt.json", {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0, 0], [0, 10]], "type": 0}]}]}
    )
    three_d = {"pts": [[0, 0, 0], [0, 10, 1]], "type": 0, "confidence_level": 0.5}
    two_d = {"pts": [[0, 0], [0, 10]], "type": 0, "confidence_level": 0.4}
    with pytest.raises(ValueError, match=r"pred\.json: protocol 'nuscenes-maptr' evaluates 2-D predictions"):
        evaluate_map_files(gt, _write(tmp_path, "pred.json", _maptr_preds([three_d])), "nuscenes-maptr")
    with pytest.raises(ValueError, match=r"pred\.json: sample a: vectors\[1\] has 2 coordinates"):
        read_map_preds(_write(tmp_path, "pred.json", _maptr_preds([three_d, two_d])))
    with pytest.raises(ValueError, match=r"pred\.json: 3-D predictions, but .*gt\.json holds 2-D lines"):
        evaluate_map_files(gt, _write(tmp_path, "pred.json", _maptr_preds([three_d])))


def test_duplicate_tokens_are_refused_naming_both_places(tmp_path):
    sample = {"sample_token": "a", "vectors": []}
    with pytest.raises(ValueError, match=r"gt\.json: sample token a appears twice \(GTs\[0\] and GTs\[2\]\)"):
        read_map_gt(_write(tmp_path, "gt.json", {"GTs": [sample, {"sample_token": "b", "vectors": []}, sample]}))
    with pytest.raises(ValueError, match=r"pred\.json: sample token a appears twice \(results\[0\] and results\[1\]\)"):
        read_map_preds(_write(tmp_path, "pred.json", {"results": [sample, sample]}))
    frame = {"timestamp": "5", "annotation": {}}
    with pytest.raises(ValueError, match=r"sample token 5 appears twice \(segment s1 frame 0 and segment s2 frame 0\)"):
        read_map_gt(_write(tmp_path, "gt.json", {"s1": [frame], "s2": [frame]}), "av2")
    gt = [MapSample("a", [GT_LINE], ["divider"])] * 2
    with pytest.raises(ValueError, match=r"GT: sample a appears twice \(samples 0 and 1\)"):
        evaluate_map_samples(gt, [])


def test_one_large_sample_does_not_pad_the_whole_batch():
    from drivemetrics.vectormap.evaluate import BATCH_POINTS, _batches
    from drivemetrics.vectormap.protocol import get_protocol

    small = MapSample("s", [GT_LINE] * 5, ["divider"] * 5, [0.5] * 5)
    big = MapSample("b", [np.zeros((900, 2))] * 900, ["divider"] * 900, [0.5] * 900)
    gt = [small] * 1000 + [big] + [small] * 1000
    batches = _batches(gt, gt, get_protocol("default"), 2000)
    (with_big,) = [b for b in batches if 1000 in b]
    assert len(with_big) * 900 * 900 <= BATCH_POINTS  # padded to the large sample: only a few samples
    assert sum(len(b) for b in batches) == len(gt)
    assert [b.start for b in batches] == sorted(b.start for b in batches)
