"""Average Path Length Similarity (APLS), CosmiQ's definition (Van Etten et al., SpaceNet 3), and Sat2Graph's.

CosmiQ (``protocol="cosmiq"``, default):

1. Control points of a graph: its junctions and endpoints (degree != 2) plus points along every road (chain of
   degree-2 nodes between them) of length ``L``: ``ceil(L / control_spacing) - 1`` evenly spaced points when
   ``L > control_spacing``, the midpoint when ``0.75 * control_spacing <= L <= control_spacing``.
2. Each control point of one graph is projected onto the nearest edge of the other graph and inserted there as a
   node when it is closer than ``max_snap_dist``; otherwise it is *missing*.
3. For ordered pairs (s, t) of GT control points connected in the GT with GT path length
   ``L_gt >= min_path_length``: ``diff = min(1, |L_gt - L_pred| / L_gt)`` with ``L_pred`` the shortest-path length
   between the inserted points in the prediction; ``diff = 1`` when an end is missing or they are not connected.
   ``C(gt -> pred) = 1 - mean(diff)``; ``C(pred -> gt)`` likewise with the roles swapped.
4. APLS = harmonic mean of the two (0 when either is 0).

Sources: when a graph has more than ``max_sources`` control points, ``max_sources`` of them are drawn (seeded) as
path sources and every control point is a target (CosmiQ's ``make_graphs_yuge`` does this above 500 GT nodes with
an unseeded draw). Shortest paths are chunked multi-source Dijkstra (scipy); everything else is vectorised.

Differences from CosmiQ's code, on purpose: a missing *source* node gets the same ``min_path_length`` filter as every
other pair (CosmiQ counts all its pairs, even very short ones, as 1); when two control points project onto the same
existing node both keep it (CosmiQ relabels the node, so the first point looks missing); ``is_curved_eps`` is not
used (its function default 10**3 silently disables all midpoints; we always place them, as CosmiQ's CLI does).

Sat2Graph's Go implementation differs: control points snap within 10 units (not 4); pairs need
``L_gt > min_path_length`` = 100 (not ``>= 10``); and the two directions are combined by the *arithmetic* mean (not
the harmonic mean). ``protocol="sat2graph"`` selects its parameters (10, 100); ``compat="reference"`` (only with
that protocol) adds its strict ``>`` and arithmetic mean. Not reproduced: Go snaps to the nearest node of a graph
densified every 2 units (we project onto the edge: the snapped position differs by <= 1 unit), places its control
points by hop counts (~25 hops of 2 units ~ 50 units), skips points within 100 units of the tile border and
suppresses snapped nodes within 4 hops of an already matched one (nearly one-to-one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import graph_pairs, result_tensors, validate_graph
from drivemetrics.graph.path_similarity import PARAMETER_SETS, apls_scores, control_points, path_differences

__all__ = ["PROTOCOLS", "APLSMetrics", "APLSProtocol", "APLSResult", "APLSScore", "apls"]

APLSProtocol = Literal["cosmiq", "sat2graph"]
PROTOCOLS: tuple[APLSProtocol, ...] = ("cosmiq", "sat2graph")


@dataclass(frozen=True)
class APLSResult:
    """APLS, the two one-way scores and the summed path differences / pair counts behind them."""

    apls: float
    gt_to_pred: float
    pred_to_gt: float
    diff_gt_to_pred: float
    pairs_gt_to_pred: int
    diff_pred_to_gt: float
    pairs_pred_to_gt: int


def apls(
    preds: nx.Graph,
    target: nx.Graph,
    *,
    protocol: APLSProtocol = "cosmiq",
    compat: Compat = "default",
    control_spacing: float | None = None,
    max_snap_dist: float | None = None,
    min_path_length: float | None = None,
    max_sources: int | None = 500,
    seed: int = 0,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """APLS between a predicted and a ground-truth road graph.

    Args:
        preds: predicted graph (``pos`` in the units of the parameters: metres for CosmiQ's defaults); may be empty
            (APLS 0).
        target: ground-truth graph; must have an edge.
        protocol: parameter set, ``"cosmiq"`` (SpaceNet; snapping 4, minimum path 10) or ``"sat2graph"``
            (snapping 10, minimum path 100).
        compat: ``"default"`` (harmonic mean, paths ``>= min_path_length``) or ``"reference"`` (Sat2Graph's
            released Go code: arithmetic mean, paths ``> min_path_length``; only with ``protocol="sat2graph"``).
        control_spacing: distance between control points along roads (default 50).
        max_snap_dist: snapping distance of control points onto the other graph (cosmiq 4, sat2graph 10).
        min_path_length: GT paths shorter than this are skipped (cosmiq 10, ``>=``; sat2graph 100, ``>``).
        max_sources: at most this many path sources per direction (seeded draw); ``None`` = all control points.
        seed: seed of the source draw.
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Examples:
        >>> import networkx as nx
        >>> from drivemetrics.functional import apls
        >>> g = nx.Graph([(0, 1), (1, 2), (1, 3)])
        >>> nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (100.0, 0.0), 2: (200.0, 0.0), 3: (100.0, 100.0)}, "pos")
        >>> apls(g, g)["apls"]
        tensor(1., dtype=torch.float64)
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    reference = check_compat(compat)
    if protocol not in PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {PROTOCOLS}, got {protocol!r}")
    if reference and protocol != "sat2graph":
        raise ValueError(
            "`compat='reference'` reproduces Sat2Graph's released APLS (protocol='sat2graph'); "
            "CosmiQ's released code is not reproduced (see the module doc)"
        )
    opts = dict(PARAMETER_SETS[protocol])
    for key, value in (
        ("control_spacing", control_spacing),
        ("max_snap_dist", max_snap_dist),
        ("min_path_length", min_path_length),
    ):
        if value is not None:
            opts[key] = float(value)
    if not (opts["control_spacing"] > 0 and opts["max_snap_dist"] > 0 and opts["min_path_length"] >= 0):
        raise ValueError(f"need control_spacing > 0, max_snap_dist > 0, min_path_length >= 0; got {opts}")
    if max_sources is not None and max_sources < 1:
        raise ValueError(f"`max_sources` must be >= 1 or None, got {max_sources}")
    gt = validate_graph(target, "target", allow_empty=False)
    pred = validate_graph(preds, "preds")
    if pred.number_of_edges() == 0:
        return result_tensors(APLSResult(0.0, 0.0, 0.0, 0.0, 0, 0.0, 0))
    cp_gt = control_points(gt, opts["control_spacing"])
    cp_pred = control_points(pred, opts["control_spacing"])
    d_gp, n_gp, d_pg, n_pg = path_differences(
        gt, pred, cp_gt, cp_pred, opts["max_snap_dist"], opts["min_path_length"], reference, max_sources, seed
    )
    value, c_gp, c_pg = apls_scores(d_gp, n_gp, d_pg, n_pg, _combine(compat))
    return result_tensors(APLSResult(value, c_gp, c_pg, d_gp, n_gp, d_pg, n_pg))


def _combine(compat: str) -> str:
    """How the two one-way scores are combined: harmonic mean, arithmetic with Sat2Graph's released code."""
    return "arithmetic" if compat == "reference" else "harmonic"


class APLSMetrics(MetricFamily):
    """Accumulates APLS path differences and pair counts over tiles (sum-reduced).

    ``compute`` returns the one-way scores from the pooled sums and their harmonic (or, with ``compat="reference"``,
    arithmetic) mean, plus ``mean_apls``: the mean of the per-tile APLS values (SpaceNet's protocol).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.roadnet import APLSMetrics
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> metric = APLSMetrics()
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 4) for k, v in metric.compute().items()}
        {'apls': 0.7226, 'gt_to_pred': 0.5665, 'pred_to_gt': 0.9975, 'mean_apls': 0.7226}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    diff_gt_to_pred: Tensor
    pairs_gt_to_pred: Tensor
    diff_pred_to_gt: Tensor
    pairs_pred_to_gt: Tensor
    apls_sum: Tensor
    tiles: Tensor

    def __init__(
        self,
        protocol: APLSProtocol = "cosmiq",
        compat: Compat = "default",
        max_sources: int | None = 500,
        seed: int = 0,
        *,
        control_spacing: float | None = None,
        max_snap_dist: float | None = None,
        min_path_length: float | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if check_compat(compat) and protocol != "sat2graph":
            raise ValueError("`compat='reference'` reproduces Sat2Graph's released APLS: use protocol='sat2graph'")
        if protocol not in PROTOCOLS:
            raise ValueError(f"`protocol` must be one of {PROTOCOLS}, got {protocol!r}")
        self.options = {
            "protocol": protocol,
            "compat": compat,
            "max_sources": max_sources,
            "seed": seed,
            "control_spacing": control_spacing,
            "max_snap_dist": max_snap_dist,
            "min_path_length": min_path_length,
        }
        for name in ("diff_gt_to_pred", "pairs_gt_to_pred", "diff_pred_to_gt", "pairs_pred_to_gt", "apls_sum"):
            self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tiles", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("APLSMetrics", sorted(self.options.items())))

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add one graph pair or a batch of pairs."""
        for p, t in graph_pairs(preds, target):
            r = apls(p, t, **self.options, validate_args=self.validate_args)
            self.diff_gt_to_pred = self.diff_gt_to_pred + r["diff_gt_to_pred"]
            self.pairs_gt_to_pred = self.pairs_gt_to_pred + r["pairs_gt_to_pred"]
            self.diff_pred_to_gt = self.diff_pred_to_gt + r["diff_pred_to_gt"]
            self.pairs_pred_to_gt = self.pairs_pred_to_gt + r["pairs_pred_to_gt"]
            self.apls_sum = self.apls_sum + r["apls"]
            self.tiles = self.tiles + 1

    def compute(self) -> dict[str, Tensor]:
        """Pooled APLS and one-way scores, and the mean per-tile APLS."""
        combine = _combine(self.options["compat"])
        value, c_gp, c_pg = apls_scores(
            float(self.diff_gt_to_pred),
            float(self.pairs_gt_to_pred),
            float(self.diff_pred_to_gt),
            float(self.pairs_pred_to_gt),
            combine,
        )
        mean = float(self.apls_sum) / int(self.tiles) if int(self.tiles) else 0.0
        return {
            "apls": torch.tensor(value),
            "gt_to_pred": torch.tensor(c_gp),
            "pred_to_gt": torch.tensor(c_pg),
            "mean_apls": torch.tensor(mean),
        }


class APLSScore(ScalarMetric, APLSMetrics):
    """APLS from the path differences pooled over tiles (arguments as :class:`APLSMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import APLSScore, roadnet_example_inputs
        >>> APLSScore()(**roadnet_example_inputs())
        tensor(0.7226)
    """

    key = "apls"
