"""OpenLane-V2 scores: OLS (centerline track) and OLUS (lane-segment track) with every sub-score, as the devkit
2.1.0 computes them (``compat="reference"``, equal to the devkit to 1e-6) or with the library's fixes (default).

Centerline track: ``det_l`` (lane AP, Frechet thresholds 1, 2, 3 m), ``det_t`` (traffic-element AP, IoU > 0.25,
mean over 13 attributes), ``top_ll`` / ``top_lt`` (topology of lane-lane and lane-element relations),
``ols = mean(det_l, det_t, sqrt(top_ll), sqrt(top_lt))`` and the 3D-lane ``f_score``. Lane-segment track:
``det_ls``, ``det_a`` (area AP, Chamfer 0.5, 1, 1.5 m, two categories), ``det_t``, ``top_lsls``, ``top_lste`` and
``olus = mean(det_ls, det_a, det_t, sqrt(top_lsls), sqrt(top_lste))``. Keys are snake_case in Python; the
command writes the devkit's names (``DET_l``, ``OLS``, ...) through
:data:`~drivemetrics.lanetopology.scoring.DEVKIT_NAMES`.

The path of a batch: devkit dicts are read into :class:`~drivemetrics.lanetopology.frames.LaneFrame` (``frames``),
:func:`~drivemetrics.lanetopology.scoring.batch_statistics` computes the pooled statistics, and
:func:`~drivemetrics.lanetopology.scoring.scores_from_statistics` the scores; the default mode's fixes (matching
fall-back, tie groups, exact AP levels, NaN for classes without ground truth, a topology AP over every relation
candidate that only depends on the order of the relation confidences) are described there and in the domain page.

State: everything the scores need is summed per batch, except the APs, which need each detection's (and, in the
default mode, each relation candidate's) confidence and true-positive flag pooled over all frames: ``(N, 3)`` rows
``[channel, confidence, tp]``, kept as ragged state (:mod:`drivemetrics._internal.ragged`, one chunk per
``update``), so that processes with no update or different numbers of frames sync in one gather.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.ragged import RaggedRows, RaggedStateMixin
from drivemetrics._internal.validation import check_values
from drivemetrics.lanetopology.frames import LaneFrame, Track, check_frame_input
from drivemetrics.lanetopology.scoring import (
    LANE_THRESHOLDS,
    NUM_AP_CHANNELS,
    SCORE_KEYS,
    check_track,
    frame_statistics,
    scores_from_statistics,
)

__all__ = [
    "OpenLaneV2AreaAP",
    "OpenLaneV2F1Score",
    "OpenLaneV2LaneAP",
    "OpenLaneV2LaneElementTopology",
    "OpenLaneV2LaneTopology",
    "OpenLaneV2Metrics",
    "OpenLaneV2Score",
    "OpenLaneV2TrafficElementAP",
    "OpenLaneV2UniScore",
    "OpenLaneV2UniScoreMetrics",
    "frame_statistics",
    "openlanev2_scores",
]


def openlanev2_scores(
    preds: Sequence[Any],
    target: Sequence[Any],
    *,
    track: Track = "centerline",
    compat: Compat = "default",
    device: torch.device | str = "cpu",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """OLS or OLUS with every sub-score and per-threshold value, for a list of frames.

    Args:
        preds: per frame the devkit's prediction dict (``lane_centerline`` / ``lane_segment`` ... with
            ``confidence``), or a :class:`LaneFrame`.
        target: per frame the devkit's annotation dict, same order.
        track: ``"centerline"`` or ``"lanesegment"``.
        compat: ``"reference"`` reproduces the devkit 2.1.0; ``"default"`` applies the documented fixes.
        device: where the lane distances are computed.
        validate_args: run the file readers' checks on every frame (sizes within the map limits, points finite
            and within ``max_map_coordinate``, confidences in [0, 1]); ``False`` skips them.

    Returns:
        float64 scalar tensors under the snake_case keys of
        :func:`~drivemetrics.lanetopology.scoring.scores_from_statistics` (``det_l``, ``top_ll``, ``ols``, ...).

    Examples:
        >>> from drivemetrics.functional import openlanev2_scores
        >>> gt = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...       "topology_lclc": [[0]], "topology_lcte": []}
        >>> pred = {"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}
        >>> scores = openlanev2_scores([pred], [gt], compat="reference")
        >>> float(scores["det_l"]), float(scores["top_ll"]), float(scores["f_score"])
        (1.0, 1.0, 1.0)
    """
    if validate_args:
        _check_frames(preds, "preds", track)
        _check_frames(target, "target", track)
    stats = frame_statistics(preds, target, track, compat, device)
    values = scores_from_statistics(**stats, track=track, compat=compat)
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in values.items()}


def _check_frames(frames: Sequence[Any], name: str, track: Track) -> None:
    """``validate_args``: the file readers' boundary check (:func:`check_frame_input`: sizes within the map limits,
    points finite and within ``max_map_coordinate``, confidences in [0, 1]) on every frame given as a dict, and the
    confidences of every :class:`LaneFrame`."""
    items = [frames] if isinstance(frames, (Mapping, LaneFrame)) else frames
    for k, item in enumerate(items):
        if isinstance(item, LaneFrame):
            for field in ("lane_confidence", "te_confidence", "area_confidence"):
                if getattr(item, field) is not None:
                    check_values(getattr(item, field), f"{name}[{k}].{field}", low=0.0, high=1.0, what="confidences")
        elif isinstance(item, Mapping):
            token = item.get("token", f"{name}[{k}]")
            token = "/".join(map(str, token)) if isinstance(token, (tuple, list)) else str(token)
            check_frame_input(item, track=track, is_pred=name == "preds", where=f"frame {token}")


class _OpenLaneV2Family(RaggedStateMixin, MetricFamily):
    """The states, update and compute shared by :class:`OpenLaneV2Metrics` and :class:`OpenLaneV2UniScoreMetrics`."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    ap_num_gt: Tensor
    topology: Tensor
    fscore: Tensor
    track: Track  # set by the subclass before this __init__ runs

    def __init__(
        self,
        compat: Compat = "default",
        distance_device: torch.device | str | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        self.compat = compat
        self.distance_device = distance_device
        self.names = SCORE_KEYS[self.track]  # the track's names of its values, for the scalar classes' keys
        # the one per-detection state (see the module docstring)
        self.add_ragged_state(ap=((3,), torch.float64))
        self.add_state("ap_num_gt", torch.zeros(NUM_AP_CHANNELS, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("topology", torch.zeros(2, 2, len(LANE_THRESHOLDS), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("fscore", torch.zeros(5, dtype=torch.float64), dist_reduce_fx="sum")
        add_config_state(self, ("OpenLaneV2", self.track, self.compat))

    def update(self, preds: Sequence[Any], target: Sequence[Any]) -> None:
        """Add frames: ``preds`` and ``target`` are lists of per-frame devkit dicts (or :class:`LaneFrame`)."""
        device = self.distance_device if self.distance_device is not None else "cpu"
        if self.validate_args:
            _check_frames(preds, "preds", self.track)
            _check_frames(target, "target", self.track)
        stats = frame_statistics(preds, target, self.track, self.compat, device)  # type: ignore[arg-type]
        rows = torch.from_numpy(stats["ap_rows"]).to(torch.float64).reshape(-1, 3)
        self.append_frames(ap=RaggedRows(rows, torch.tensor([rows.shape[0]])))  # the batch as one chunk
        self.ap_num_gt = self.ap_num_gt + torch.from_numpy(stats["ap_num_gt"]).to(self.device)
        self.topology = self.topology + torch.from_numpy(stats["topology"]).to(self.device)
        self.fscore = self.fscore + torch.from_numpy(stats["fscore"]).to(self.device)

    def compute(self) -> dict[str, Tensor]:
        """The scores, float64 scalars (keys of :func:`scores_from_statistics`)."""
        rows_np = self.ragged_frames().fields["ap"].rows.detach().cpu().numpy()
        values = scores_from_statistics(
            rows_np.reshape(-1, 3),
            self.ap_num_gt.cpu().numpy(),
            self.topology.cpu().numpy(),
            self.fscore.cpu().numpy(),
            track=self.track,  # type: ignore[arg-type]
            compat=self.compat,  # type: ignore[arg-type]
        )
        return {k: torch.tensor(v, dtype=torch.float64, device=self.device) for k, v in values.items()}


class OpenLaneV2Metrics(_OpenLaneV2Family):
    """OpenLane-V2 scores over all frames seen: a dict of OLS / OLUS, sub-scores and per-threshold values.

    Args:
        track: ``"centerline"`` (OLS) or ``"lanesegment"`` (OLUS).
        compat: ``"reference"`` reproduces the devkit 2.1.0 (to 1e-6 on its fixture); ``"default"`` applies the
            documented fixes.
        distance_device: where the lane distances are computed (default: CPU; ``"cuda"`` for the GPU).
        kwargs: passed to :class:`torchmetrics.Metric`.

    ``update(preds, target)`` takes lists of per-frame devkit dicts (numpy arrays, tensors or lists inside).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2Metrics
        >>> gt = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...       "topology_lclc": [[0]], "topology_lcte": []}
        >>> pred = {"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}
        >>> metric = OpenLaneV2Metrics(compat="reference")
        >>> metric.update([pred], [gt])
        >>> scores = metric.compute()
        >>> float(scores["det_l"]), float(scores["top_ll"])
        (1.0, 1.0)

    Without any lane-element relation in the ground truth, the devkit's TOP_lt is 0, so OLS is
    ``(1 + 1 + 1 + 0) / 4``:

    Examples:
        >>> float(scores["ols"])
        0.75
    """

    def __init__(
        self,
        track: Track = "centerline",
        compat: Compat = "default",
        distance_device: torch.device | str | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        self.track = check_track(track)
        super().__init__(compat=compat, distance_device=distance_device, validate_args=validate_args, **kwargs)


class OpenLaneV2UniScoreMetrics(_OpenLaneV2Family):
    """The lane-segment track's scores (OLUS, DET_ls, DET_a, DET_t, TOP_lsls, TOP_lste and per-threshold values):
    :class:`OpenLaneV2Metrics` with ``track="lanesegment"``, the family of :class:`OpenLaneV2UniScore` and
    :class:`OpenLaneV2AreaAP`.

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2UniScoreMetrics, openlanev2_example_inputs
        >>> metric = OpenLaneV2UniScoreMetrics()
        >>> metric.update(**openlanev2_example_inputs("lanesegment"))
        >>> {key: round(float(metric.compute()[key]), 4) for key in ("olus", "det_ls", "det_a", "top_lsls")}
        {'olus': 0.8549, 'det_ls': 0.697, 'det_a': 1.0, 'top_lsls': 0.3333}
    """

    def __init__(
        self,
        compat: Compat = "default",
        distance_device: torch.device | str | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        self.track = "lanesegment"
        super().__init__(compat=compat, distance_device=distance_device, validate_args=validate_args, **kwargs)


class _CenterlineMetrics(OpenLaneV2Metrics):
    """:class:`OpenLaneV2Metrics` of the centerline track, the family of the values defined there only."""

    def __init__(
        self,
        compat: Compat = "default",
        distance_device: torch.device | str | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            track="centerline", compat=compat, distance_device=distance_device, validate_args=validate_args, **kwargs
        )


class OpenLaneV2Score(ScalarMetric, _CenterlineMetrics):
    """OLS ``= (det_l + det_t + sqrt(top_ll) + sqrt(top_lt)) / 4``, the OpenLane-V2 score of the centerline track
    (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2Score, openlanev2_example_inputs
        >>> OpenLaneV2Score()(**openlanev2_example_inputs())
        tensor(0.9162, dtype=torch.float64)
    """

    key = "ols"


class OpenLaneV2UniScore(ScalarMetric, OpenLaneV2UniScoreMetrics):
    """OLUS ``= (det_ls + det_a + det_t + sqrt(top_lsls) + sqrt(top_lste)) / 5``, the OpenLane-V2 UniScore of the
    lane-segment track (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2UniScore, openlanev2_example_inputs
        >>> OpenLaneV2UniScore()(**openlanev2_example_inputs("lanesegment"))
        tensor(0.8549, dtype=torch.float64)
    """

    key = "olus"


class OpenLaneV2F1Score(ScalarMetric, _CenterlineMetrics):
    """The 3D-lane F-score of the centerline track (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2F1Score, openlanev2_example_inputs
        >>> OpenLaneV2F1Score()(**openlanev2_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "f_score"


class OpenLaneV2AreaAP(ScalarMetric, OpenLaneV2UniScoreMetrics):
    """DET_a, area AP of the lane-segment track: mean over two categories and the Chamfer thresholds 0.5, 1 and
    1.5 m (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2AreaAP, openlanev2_example_inputs
        >>> OpenLaneV2AreaAP()(**openlanev2_example_inputs("lanesegment"))
        tensor(1., dtype=torch.float64)
    """

    key = "det_a"


class OpenLaneV2LaneAP(ScalarMetric, OpenLaneV2Metrics):
    """DET_l (centerline track) or DET_ls (lane-segment track): lane AP, mean over the Frechet thresholds 1, 2 and
    3 m (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2LaneAP, openlanev2_example_inputs
        >>> OpenLaneV2LaneAP(track="lanesegment")(**openlanev2_example_inputs("lanesegment"))
        tensor(0.6970, dtype=torch.float64)
    """

    key = "{names[lane]}"


class OpenLaneV2TrafficElementAP(ScalarMetric, OpenLaneV2Metrics):
    """DET_t, traffic-element AP averaged over the 13 attributes (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2TrafficElementAP, openlanev2_example_inputs
        >>> OpenLaneV2TrafficElementAP()(**openlanev2_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "det_t"


class OpenLaneV2LaneTopology(ScalarMetric, OpenLaneV2Metrics):
    """TOP_ll (centerline track) or TOP_lsls (lane-segment track) (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2LaneTopology, openlanev2_example_inputs
        >>> OpenLaneV2LaneTopology()(**openlanev2_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "{names[top_ll]}"


class OpenLaneV2LaneElementTopology(ScalarMetric, OpenLaneV2Metrics):
    """TOP_lt (centerline track) or TOP_lste (lane-segment track): the topology score of the relations between
    lanes and traffic elements (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> from drivemetrics.lanetopology import OpenLaneV2LaneElementTopology, openlanev2_example_inputs
        >>> OpenLaneV2LaneElementTopology()(**openlanev2_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "{names[top_lt]}"
