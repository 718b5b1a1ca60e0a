"""Apollo 3D Lane Synthetic scores (Gen-LaneNet's evaluator): AP over 19 probability thresholds, max F-score and
the x / z errors near (y <= 40 m) and far at its threshold.

Lanes are in the ground frame (metres; x right, y forward, z up), packed lane after lane
(:class:`~drivemetrics.lane3d.packed.PackedLanes`): GT lanes with a visibility per point, predictions with a
probability per lane. Per frame and threshold ``th`` of ``linspace(0.05, 0.95, 19)`` (a prediction counts when its
probability is strictly above): lanes are resampled at y = 3, 4, ..., 102 m (linear interpolation over y,
extrapolating; a sample is visible when -10 <= x <= 10 m and y lies within the lane), every GT x prediction pair gets
a cost (the point distance summed over the samples, 1.5 m where a lane is not visible), the minimum-cost assignment
of maximum cardinality is taken, and a pair costing less than 150 counts: a recall hit when 75 % of the GT's visible
samples are matched (both visible, closer than 1.5 m), a precision hit likewise for the prediction; its mean |dx|,
|dz| over the samples both show near and far are the errors (1.5 when there is none). R = Σr / (Σ#GT + 1e-6),
P = Σp / (Σ#pred + 1e-6), F = 2RP / (R + P + 1e-6) pooled over frames; AP is the mean of the P(R) curve
(``scipy.interpolate.interp1d`` over ``[1] + R + [0]`` / ``[0] + P + [1]``) at the 19 recalls 0.05, ..., 0.95;
the errors are taken at the first threshold of maximal F.

``compat="reference"`` reproduces ``tools/eval_3D_lane.py`` of yuliangguo/Pytorch_Generalized_3D_Lane_Detection
(45c6cc4): GT points kept where visible, a GT lane kept when its first point (file order) lies before y = 102 m
and its last after 3 m, GT points pruned to 0 < y < 200 and -30 < x < 30; predictions not filtered at all (one of
fewer than 2 points raises, as the tool stops); 1.5 m charged wherever either lane is invisible, also where both
are (kept in the default mode: every pair is costed over the same 100 samples); the cost truncated to an int for
OR-Tools' min-cost flow, whose choice among tied optimal assignments is kept (:mod:`drivemetrics.lane3d.mincostflow`).
The default mode (docs page "3D lanes"):

- predictions are pruned in step with the GT (range test, 0 < y < 200, -30 < x < 30, 2 points): a prediction
  wholly outside the evaluated area no longer counts as a false positive, and a 1-point prediction is dropped
  instead of stopping the run;
- the cost is the float sum (the tool truncates it to an int for OR-Tools' min-cost flow, which ties or reorders
  pairs closer than 1 m over 100 samples), and pairs of cost >= 150 are gated before the assignment (the tool
  assigns first and drops them after, so an impossible pair can take a GT lane from a valid match);
- the GT range test reads the lane's lowest and highest y (the tool drops a lane listed far to near).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics.lane3d.apollo_scoring import (
    APOLLO_THRESHOLDS,
    ERROR_NAMES,
    apollo3d_matches,
    apollo3d_resample,
    apollo3d_scores,
)
from drivemetrics.lane3d.packed import packed_from_padded

__all__ = [
    "APOLLO_THRESHOLDS",
    "Apollo3DAveragePrecision",
    "Apollo3DMaxFScore",
    "Apollo3DMetrics",
    "Apollo3DXErrorClose",
    "Apollo3DXErrorFar",
    "Apollo3DZErrorClose",
    "Apollo3DZErrorFar",
    "apollo3d_matches",
    "apollo3d_resample",
    "apollo3d_scores",
]


class Apollo3DMetrics(MetricFamily):
    """Apollo 3D Lane Synthetic lane-line scores over the 19 probability thresholds (sum-reduced counts).

    ``update(preds, target)``: ``preds`` ``{"points": (B, L, N, 3), "lengths": (B, L), "scores": (B, L)}``,
    ``target`` ``{"points": (B, G, N, 3), "lengths": (B, G), "visibility": (B, G, N)}`` (ground frame, metres;
    ``lengths`` and ``visibility`` optional). ``compute()`` -> ``{"ap", "max_f", "max_f_threshold", "recall",
    "precision", "x_error_close", "x_error_far", "z_error_close", "z_error_far"}`` (the errors at the max-F
    threshold).

    Args:
        compat: ``"default"`` or ``"reference"`` (the module doc).
        validate_args: refuse points beyond ``max_lane3d_abs_metres`` (the readers' limit) in ``update``.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane3d import Apollo3DMetrics
        >>> lane = torch.tensor([[1.8, 3.0, 0.0], [1.8, 100.0, 0.0]], dtype=torch.float64)
        >>> target = {"points": torch.stack([lane, lane - torch.tensor([3.6, 0, 0])])[None]}
        >>> preds = {"points": (lane + torch.tensor([0.2, 0, 0.1]))[None, None], "scores": torch.tensor([[0.6]])}
        >>> out = Apollo3DMetrics()(preds, target)
        >>> {k: round(float(v), 4) for k, v in out.items()}  # doctest: +NORMALIZE_WHITESPACE
        {'ap': 0.7632, 'max_f': 0.6667, 'max_f_threshold': 0.05, 'recall': 0.5, 'precision': 1.0,
         'x_error_close': 0.2, 'x_error_far': 0.2, 'z_error_close': 0.1, 'z_error_far': 0.1}
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, compat: Compat = "default", validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reference = check_compat(compat)
        self.compat: Compat = compat
        self.validate_args = validate_args
        add_config_state(self, self.reference)
        t = len(APOLLO_THRESHOLDS)
        self.add_state("counts", torch.zeros(t, 4, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("error_sums", torch.zeros(t, 4, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("pair_counts", torch.zeros(t, dtype=torch.long), dist_reduce_fx="sum")

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
        g = packed_from_padded(
            target["points"], target.get("lengths"), visibility=target.get("visibility"), name="target"
        )
        if g.visibility is None:
            g = g._replace(visibility=np.ones(g.points.shape[0]))
        out = apollo3d_matches(p, g, frames=frames, compat=self.compat, validate_args=self.validate_args)
        t = len(APOLLO_THRESHOLDS)
        device = self.counts.device
        sums = np.zeros((t, 4))
        np.add.at(sums, out["pair_threshold"], out["pair_errors"])
        self.counts = self.counts + torch.as_tensor(out["counts"].sum(0), device=device)
        self.error_sums = self.error_sums + torch.as_tensor(sums, device=device)
        self.pair_counts = self.pair_counts + torch.as_tensor(
            np.bincount(out["pair_threshold"], minlength=t), device=device
        )

    def compute(self) -> dict[str, Tensor]:
        scores = apollo3d_scores(
            self.counts, self.error_sums, self.pair_counts, compat=self.compat, validate_args=False
        )
        device = self.counts.device
        keys = ("ap", "max_f", "max_f_threshold", "recall", "precision", *ERROR_NAMES)
        return {k: torch.tensor(float(scores[k]), dtype=torch.float64, device=device) for k in keys}


class Apollo3DAveragePrecision(ScalarMetric, Apollo3DMetrics):
    """Apollo 3D Lane Synthetic lane-line AP over the 19 probability thresholds (arguments as
    :class:`Apollo3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import Apollo3DAveragePrecision, apollo3d_example_inputs
        >>> Apollo3DAveragePrecision()(**apollo3d_example_inputs())
        tensor(0.9211, dtype=torch.float64)
    """

    key = "ap"


class Apollo3DMaxFScore(ScalarMetric, Apollo3DMetrics):
    """Apollo 3D Lane Synthetic lane-line F-score at its best probability threshold (arguments as
    :class:`Apollo3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import Apollo3DMaxFScore, apollo3d_example_inputs
        >>> Apollo3DMaxFScore()(**apollo3d_example_inputs())
        tensor(1.0000, dtype=torch.float64)
    """

    key = "max_f"


class Apollo3DXErrorClose(ScalarMetric, Apollo3DMetrics):
    """Mean |dx| (metres) of the counted pairs at y <= 40 m, at the max-F threshold (arguments as
    :class:`Apollo3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import Apollo3DXErrorClose, apollo3d_example_inputs
        >>> Apollo3DXErrorClose()(**apollo3d_example_inputs())
        tensor(0.3500, dtype=torch.float64)
    """

    key = "x_error_close"
    higher_is_better = False
    plot_upper_bound = None


class Apollo3DXErrorFar(ScalarMetric, Apollo3DMetrics):
    """Mean |dx| (metres) of the counted pairs beyond 40 m, at the max-F threshold (arguments as
    :class:`Apollo3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import Apollo3DXErrorFar, apollo3d_example_inputs
        >>> Apollo3DXErrorFar()(**apollo3d_example_inputs())
        tensor(0.3500, dtype=torch.float64)
    """

    key = "x_error_far"
    higher_is_better = False
    plot_upper_bound = None


class Apollo3DZErrorClose(ScalarMetric, Apollo3DMetrics):
    """Mean |dz| (metres) of the counted pairs at y <= 40 m, at the max-F threshold (arguments as
    :class:`Apollo3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import Apollo3DZErrorClose, apollo3d_example_inputs
        >>> Apollo3DZErrorClose()(**apollo3d_example_inputs())
        tensor(0.2000, dtype=torch.float64)
    """

    key = "z_error_close"
    higher_is_better = False
    plot_upper_bound = None


class Apollo3DZErrorFar(ScalarMetric, Apollo3DMetrics):
    """Mean |dz| (metres) of the counted pairs beyond 40 m, at the max-F threshold (arguments as
    :class:`Apollo3DMetrics`).

    Examples:
        >>> from drivemetrics.lane3d import Apollo3DZErrorFar, apollo3d_example_inputs
        >>> Apollo3DZErrorFar()(**apollo3d_example_inputs())
        tensor(0.2000, dtype=torch.float64)
    """

    key = "z_error_far"
    higher_is_better = False
    plot_upper_bound = None
