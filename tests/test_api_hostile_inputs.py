"""The Python API refuses what the commands refuse (issue 51, "the Python API is looser than the commands").

Each test is one case of the hostile-input catalogue that the API used to accept silently or fail on deep inside
torch or scipy; each now ends in one ``ValueError`` line naming the argument (or, for an empty batch, in the right
number). The checks are the commands' own (``drivemetrics._internal.limits`` through
``drivemetrics._internal.validation``). ``merge_state`` / ``load_state_dict`` refuse a metric made with another
configuration and never return a stale ``compute()`` value.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

import drivemetrics.functional as F
from drivemetrics.detection import KittiObjectMetrics, kitti_object_example_inputs
from drivemetrics.lane import CULaneMetrics, TuSimpleMetrics, culane_example_inputs, tusimple_example_inputs
from drivemetrics.lane3d import OpenLane3DMetrics, openlane3d_example_inputs
from drivemetrics.lanegraph import LaneGraphMetrics, lanegraph_example_inputs
from drivemetrics.lanetopology import LaneMatchingLoss
from drivemetrics.road import RoadPixelMetrics, road_pixel_example_inputs
from drivemetrics.roadnet import OptJMetrics, roadnet_example_inputs
from drivemetrics.vectormap import VectorMapAPMetrics, vector_map_example_inputs


def _one_line(error: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


# -- vector maps ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", [math.nan, 1.5, -0.1])
def test_map_metric_refuses_scores_the_map_command_refuses(score):
    inputs = vector_map_example_inputs()
    inputs["preds"]["scores"][0, 0] = score
    with pytest.raises(ValueError, match=r'preds\["scores"\]') as error:
        VectorMapAPMetrics().update(**inputs)
    _one_line(error)


def test_map_metric_refuses_coordinates_beyond_the_readers_limit():
    inputs = vector_map_example_inputs()
    inputs["preds"]["points"] = inputs["preds"]["points"] * 1e6
    with pytest.raises(ValueError, match="max_map_coordinate") as error:
        VectorMapAPMetrics().update(**inputs)
    _one_line(error)


@pytest.mark.parametrize("shape", [(0, 0, 0, 2), (1, 0, 0, 2), (2, 0, 3, 2)])
def test_an_empty_map_batch_counts_nothing(shape):
    empty = {"points": torch.zeros(*shape), "labels": torch.zeros(shape[:2], dtype=torch.long)}
    metric, reference = VectorMapAPMetrics(), VectorMapAPMetrics()
    metric.update({**empty, "scores": torch.zeros(shape[:2])}, empty)  # was: RuntimeError in a reshape
    metric.update(**vector_map_example_inputs())
    reference.update(**vector_map_example_inputs())
    torch.testing.assert_close(metric.compute(), reference.compute(), equal_nan=True)


def test_merging_map_metrics_of_different_protocols_is_refused():
    a, b = VectorMapAPMetrics(), VectorMapAPMetrics(protocol="nuscenes-maptr")
    a.update(**vector_map_example_inputs())
    b.update(**vector_map_example_inputs())
    with pytest.raises(ValueError, match=r"another configuration.*nuscenes-maptr") as error:
        a.merge_state(b)
    _one_line(error)


# -- OpenLane 3D ---------------------------------------------------------------------------------------------------


def _lane3d(**preds: torch.Tensor) -> dict:
    inputs = openlane3d_example_inputs()
    inputs["preds"].update(preds)
    return inputs


@pytest.mark.parametrize("length", [-1, 3])  # the example lanes have 2 points
def test_openlane3d_refuses_lengths_outside_the_points(length):
    shape = openlane3d_example_inputs()["preds"]["points"].shape[:2]
    with pytest.raises(ValueError, match=r"preds\['lengths'\]` must lie in \[0, 2\]") as error:
        OpenLane3DMetrics().update(**_lane3d(lengths=torch.full(shape, length)))
    _one_line(error)


@pytest.mark.parametrize("validate_args", [True, False])
def test_openlane3d_refuses_batches_of_different_sizes(validate_args):
    inputs = openlane3d_example_inputs()
    inputs["preds"] = {key: torch.cat([value, value]) for key, value in inputs["preds"].items()}
    with pytest.raises(ValueError, match="same frames, got B = 2 and 1") as error:
        OpenLane3DMetrics(validate_args=validate_args).update(**inputs)
    _one_line(error)


@pytest.mark.parametrize("validate_args", [True, False])
def test_openlane3d_on_the_meta_device_says_so(validate_args):
    inputs = openlane3d_example_inputs()
    meta = {side: {key: value.to("meta") for key, value in inputs[side].items()} for side in inputs}
    with pytest.raises(ValueError, match="meta device") as error:
        OpenLane3DMetrics(validate_args=validate_args).to("meta").update(**meta)
    _one_line(error)


def test_openlane3d_merge_and_load_refuse_another_compat():
    a, b = OpenLane3DMetrics(), OpenLane3DMetrics(compat="reference")
    for metric in (a, b):
        metric.update(**openlane3d_example_inputs())
    with pytest.raises(ValueError, match="'reference' there, 'default' here"):
        a.merge_state(b)
    b.persistent(True)
    with pytest.raises(ValueError, match="config_key"):
        a.load_state_dict(b.state_dict())


# -- 2D lanes ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [F.culane_f1, F.culane_counts, F.culane_matches, F.lane_iou_matrix])
def test_culane_kernels_refuse_huge_coordinates(kernel):
    inputs = culane_example_inputs()
    inputs["preds"][0, 0, 0, 0] = 1e30
    with pytest.raises(ValueError, match=r"`preds`.*max_abs_coordinate") as error:
        kernel(**inputs)
    _one_line(error)


def test_culane_and_tusimple_metrics_refuse_huge_coordinates():
    inputs = culane_example_inputs()
    inputs["target"][0, 0, 1, 1] = -1e30
    with pytest.raises(ValueError, match=r"`target`.*max_abs_coordinate"):
        CULaneMetrics().update(**inputs)
    inputs = tusimple_example_inputs()
    inputs["preds"][0, 0, 5] = 1e30
    with pytest.raises(ValueError, match=r"`preds`.*max_abs_coordinate"):
        TuSimpleMetrics().update(**inputs)


def test_lane_matching_loss_refuses_nan_lanes_before_the_assignment():
    target = torch.tensor([[[[0.0, 0.0], [5.0, 0.0], [10.0, 0.0]]]])
    with pytest.raises(ValueError, match="`preds` contains NaN") as error:  # was scipy's "invalid numeric entries"
        LaneMatchingLoss()(torch.full_like(target, math.nan), target)
    _one_line(error)


# -- road, detection ----------------------------------------------------------------------------------------------


def test_loading_a_road_metric_of_other_thresholds_is_refused_in_one_line():
    saved = RoadPixelMetrics(thresholds=10)
    saved.persistent(True)
    saved.update(**road_pixel_example_inputs())
    with pytest.raises(ValueError, match="state `tp` has shape \\(11,\\) there, \\(257,\\) here") as error:
        RoadPixelMetrics().load_state_dict(saved.state_dict())  # was an IndexError in compute()
    _one_line(error)


def test_kitti_object_metric_honours_validate_args():
    inputs = kitti_object_example_inputs()
    preds = copy.deepcopy(inputs["preds"])
    preds[0].location[0, 2] = math.inf
    with pytest.raises(ValueError, match=r"`preds`.*infinite") as error:
        KittiObjectMetrics().update(preds, inputs["target"])
    _one_line(error)
    KittiObjectMetrics(validate_args=False).update(preds, inputs["target"])


# -- merge_state after compute(): the cache is dropped, in every kind of family -----------------------------------


def _perfect(inputs: dict) -> dict:
    return {"preds": inputs["target"], "target": inputs["target"]}


FAMILIES = {
    "OpenLane3DMetrics": (OpenLane3DMetrics, openlane3d_example_inputs, lambda i: i),
    "CULaneMetrics": (CULaneMetrics, culane_example_inputs, _perfect),
    "TuSimpleMetrics": (TuSimpleMetrics, tusimple_example_inputs, lambda i: {**i, "preds": i["preds"] + 100.0}),
    "RoadPixelMetrics": (RoadPixelMetrics, road_pixel_example_inputs, lambda i: {**i, "preds": i["target"].float()}),
    "LaneGraphMetrics": (LaneGraphMetrics, lanegraph_example_inputs, _perfect),
    "OptJMetrics": (OptJMetrics, roadnet_example_inputs, _perfect),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_merge_state_after_compute_returns_the_merged_value(name):
    cls, example, other = FAMILIES[name]
    first, second, both = cls(), cls(), cls()
    first.update(**example())
    second.update(**other(example()))
    both.update(**example())
    both.update(**other(example()))
    before = first.compute()
    first.merge_state(second)
    after, expected = first.compute(), both.compute()
    torch.testing.assert_close(after, expected, equal_nan=True)
    assert any(not torch.equal(before[k], expected[k]) for k in expected), "the test needs a value that changes"
