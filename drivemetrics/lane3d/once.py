"""ONCE-3DLanes scores: F1, precision, recall and distance error over the 18 score thresholds 0.10 ... 0.95.

Lanes are in the camera frame (metres; x right, y down, z forward), packed lane after lane
(:class:`~drivemetrics.lane3d.packed.PackedLanes`). Per frame and score threshold (a predicted lane counts when its
score is strictly above it): GT lanes of 2 points or more; each lane is reversed when its first point is farther
than its second; the lanes are matched by the Munkres assignment on ``1 - IoU`` of their BEV rasters (1000 x 400
pixels of 5 cm, lines 30 pixels wide); a matched pair is a true positive when the mean distance from 10 points along
the GT lane (at 5 %, 15 %, ..., 95 % of its length) to the predicted polyline is below 0.3 m. Precision = TP / #pred,
recall = TP / #GT, F1, distance error = summed TP distances / TP, pooled over frames.

``compat="reference"`` reproduces ``evaluation/eval_utils.py`` of once-3dlanes/once_3dlanes_benchmark (7582fbb)
with munkres 1.1.4 (its tie choices, :mod:`drivemetrics.lane3d.munkres`): the raster only draws the points closer
than 10 m; the distance is shapely's, in the x-y plane (forward depth z plays no part); the table is float32 with
NaN at 0 / 0; a prediction of fewer than 2 points raises (the tool stops). The default mode (see the docs page
"3D lanes"):

- the distance is measured in 3D (a lane at the right lateral offset but another depth range is not a TP);
- the BEV raster draws the whole lane (the tool's IoU sees the first 10 m only, so lanes starting beyond 10 m have
  IoU 0 with everything and are assigned arbitrarily);
- a prediction of 0 or 1 point is scored (0 points: never a TP; 1 point: a dot) instead of stopping the run;
- 0 / 0 ratios are 0 instead of NaN.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics.lane3d.once_scoring import (
    ONCE_THRESHOLDS,
    once3d_iou,
    once3d_matches,
    once3d_mean_distance,
    once3d_scores,
)
from drivemetrics.lane3d.packed import (
    packed_from_padded,
)

__all__ = [
    "ONCE_THRESHOLDS",
    "ONCE3DDistanceError",
    "ONCE3DF1Score",
    "ONCE3DMetrics",
    "ONCE3DPrecision",
    "ONCE3DRecall",
    "once3d_iou",
    "once3d_matches",
    "once3d_mean_distance",
    "once3d_scores",
]


class ONCE3DMetrics(MetricFamily):
    """ONCE-3DLanes F1, precision, recall and distance error at one score threshold, and the 18-row table
    (sum-reduced counts).

    ``update(preds, target)``: ``preds`` ``{"points": (B, L, N, 3), "lengths": (B, L), "scores": (B, L)}``,
    ``target`` ``{"points": (B, G, N, 3), "lengths": (B, G)}`` (camera frame, metres; ``lengths`` optional, 0 marks
    an absent lane). ``compute()`` -> ``{"f1", "precision", "recall", "distance_error"}`` at ``score_threshold``
    (0.95 by default, the row PersFormer reports) and the whole table ``f1_table``, ``precision_table``,
    ``recall_table``, ``distance_error_table`` ``(18,)``.

    Args:
        score_threshold: one of :data:`ONCE_THRESHOLDS` (written as its decimal: 0.1, 0.15, ..., 0.95).
        compat: ``"default"`` or ``"reference"`` (the module doc).
        validate_args: refuse points beyond ``max_lane3d_abs_metres`` (the readers' limit) in ``update``.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane3d import ONCE3DMetrics
        >>> z = torch.arange(3.0, 41.0)
        >>> lane = torch.stack([torch.full_like(z, 1.8), torch.full_like(z, 1.6), z], 1)
        >>> target = {"points": torch.stack([lane, lane - torch.tensor([3.6, 0, 0])])[None]}
        >>> preds = {"points": (lane + torch.tensor([0.1, 0, 0]))[None, None], "scores": torch.tensor([[0.97]])}
        >>> out = ONCE3DMetrics()(preds, target)
        >>> {k: round(float(out[k]), 4) for k in ("f1", "precision", "recall", "distance_error")}
        {'f1': 0.6667, 'precision': 1.0, 'recall': 0.5, 'distance_error': 0.1}
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, score_threshold: float = 0.95, compat: Compat = "default", validate_args: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.reference = check_compat(compat)
        self.compat: Compat = compat
        self.validate_args = validate_args
        index = [k for k, t in enumerate(ONCE_THRESHOLDS) if abs(t - float(score_threshold)) < 1e-9]
        if isinstance(score_threshold, bool) or not index:
            raise ValueError(f"`score_threshold` must be one of 0.1, 0.15, ..., 0.95, got {score_threshold!r}")
        self.index = index[0]
        add_config_state(self, (self.reference, self.index))
        self.add_state("counts", torch.zeros(len(ONCE_THRESHOLDS), 3, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("distance_sum", torch.zeros(len(ONCE_THRESHOLDS), dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, preds: dict[str, Tensor], target: dict[str, Tensor]) -> None:
        for name, value in (("preds", preds), ("target", target)):
            if not isinstance(value, dict) or "points" not in value:
                raise ValueError(f"`{name}` must be a dict with 'points'")
        if "scores" not in preds:
            raise ValueError("`preds` must have 'scores' (B, L)")
        frames = int(target["points"].shape[0])
        if int(preds["points"].shape[0]) != frames:
            raise ValueError(f"`preds` has {int(preds['points'].shape[0])} frames, `target` {frames}")
        p = packed_from_padded(preds["points"], preds.get("lengths"), preds["scores"], name="preds")
        g = packed_from_padded(target["points"], target.get("lengths"), name="target")
        out = once3d_matches(p, g, frames=frames, compat=self.compat, validate_args=self.validate_args)
        self.counts = self.counts + torch.as_tensor(out["counts"].sum(0), device=self.counts.device)
        self.distance_sum = self.distance_sum + torch.as_tensor(out["distance_sum"].sum(0), device=self.counts.device)

    def compute(self) -> dict[str, Tensor]:
        scores = once3d_scores(self.counts, self.distance_sum, compat=self.compat, validate_args=False)
        device = self.counts.device
        out = {}
        names = (("f1", "F1"), ("precision", "precision"), ("recall", "recall"), ("distance_error", "distance_error"))
        for key, name in names:
            out[key] = torch.tensor(scores[name][self.index], dtype=torch.float64, device=device)
        for key, name in names:
            out[f"{key}_table"] = torch.as_tensor(scores[name], dtype=torch.float64, device=device)
        return out


class ONCE3DF1Score(ScalarMetric, ONCE3DMetrics):
    """ONCE-3DLanes F1 at one score threshold (0.95 by default), a scalar for ``self.log`` (arguments as
    :class:`ONCE3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import ONCE3DF1Score, once3d_example_inputs
        >>> ONCE3DF1Score()(**once3d_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "f1"


class ONCE3DPrecision(ScalarMetric, ONCE3DMetrics):
    """ONCE-3DLanes precision at one score threshold (0.95 by default) (arguments as :class:`ONCE3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import ONCE3DPrecision, once3d_example_inputs
        >>> ONCE3DPrecision()(**once3d_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "precision"


class ONCE3DRecall(ScalarMetric, ONCE3DMetrics):
    """ONCE-3DLanes recall at one score threshold (0.95 by default) (arguments as :class:`ONCE3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import ONCE3DRecall, once3d_example_inputs
        >>> ONCE3DRecall()(**once3d_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "recall"


class ONCE3DDistanceError(ScalarMetric, ONCE3DMetrics):
    """ONCE-3DLanes mean distance of the true positives (metres) at one score threshold (0.95 by default)
    (arguments as :class:`ONCE3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import ONCE3DDistanceError, once3d_example_inputs
        >>> ONCE3DDistanceError()(**once3d_example_inputs())
        tensor(0.1000, dtype=torch.float64)
    """

    key = "distance_error"
    higher_is_better = False
    plot_upper_bound = None
