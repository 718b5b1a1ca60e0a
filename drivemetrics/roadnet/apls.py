"""Average Path Length Similarity (APLS), CosmiQ's definition (Van Etten et al., SpaceNet 3), with Sat2Graph's variant.

CosmiQ (``variant="cosmiq"``, default):

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

Sat2Graph's Go implementation (``variant="sat2graph"``) differs: control points snap within 10 units (not 4); pairs
need ``L_gt > min_path_length`` = 100 (not ``>= 10``); and the two directions are combined by the *arithmetic* mean
(not the harmonic mean). The switch reproduces these three. Not reproduced: Go snaps to the nearest node of a graph
densified every 2 units (we project onto the edge: the snapped position differs by <= 1 unit), places its control
points by hop counts (~25 hops of 2 units ~ 50 units), skips points within 100 units of the tile border and
suppresses snapped nodes within 4 hops of an already matched one (nearly one-to-one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import torch
from scipy.sparse.csgraph import dijkstra
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._metric import plot_metric
from drivemetrics.roadnet.geometry import graph_arrays, road_chains, snap_points, validate_graph
from drivemetrics.roadnet.metrics import graph_pairs
from drivemetrics.roadnet.tlts import CHUNK, length_csgraph

VARIANTS = ("cosmiq", "sat2graph")
_DEFAULTS = {
    "cosmiq": {"control_spacing": 50.0, "max_snap_dist": 4.0, "min_path_length": 10.0},
    "sat2graph": {"control_spacing": 50.0, "max_snap_dist": 10.0, "min_path_length": 100.0},
}


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


def apls_scores(
    diff_gp: float, pairs_gp: float, diff_pg: float, pairs_pg: float, combine: str = "harmonic"
) -> tuple[float, float, float]:
    """``(apls, gt_to_pred, pred_to_gt)`` from summed differences and pair counts (a side without pairs scores 0)."""
    c_gp = 1.0 - diff_gp / pairs_gp if pairs_gp > 0 else 0.0
    c_pg = 1.0 - diff_pg / pairs_pg if pairs_pg > 0 else 0.0
    if combine == "arithmetic":
        value = (c_gp + c_pg) / 2
    else:
        value = 2 * c_gp * c_pg / (c_gp + c_pg) if c_gp > 0 and c_pg > 0 else 0.0
    return float(value), float(c_gp), float(c_pg)


def control_points(graph: nx.Graph, spacing: float) -> np.ndarray:
    """``K x 2`` control points: degree != 2 nodes, then points every ~``spacing`` along each road (see module doc)."""
    arrays = graph_arrays(graph)
    index = {n: i for i, n in enumerate(arrays.nodes)}
    ctrl = [index[n] for n in graph.nodes if graph.degree(n) != 2]
    points = [arrays.pos[ctrl]]
    for chain in road_chains(graph):
        poly = arrays.pos[[index[n] for n in chain]]
        seg = np.linalg.norm(np.diff(poly, axis=0), axis=1)
        cum = np.r_[0.0, np.cumsum(seg)]
        length = cum[-1]
        if length > spacing:
            n_int = math.ceil(length / spacing - 1e-9)
            at = length * np.arange(1, n_int) / n_int
        elif length >= 0.75 * spacing:
            at = np.array([length / 2])
        else:
            continue
        k = np.clip(np.searchsorted(cum, at, side="right") - 1, 0, len(seg) - 1)
        t = (at - cum[k]) / np.maximum(seg[k], 1e-12)
        points.append(poly[k] + t[:, None] * (poly[k + 1] - poly[k]))
    return np.concatenate(points).reshape(-1, 2)


def _snap_rows(graph: nx.Graph, points: np.ndarray, max_dist: float) -> tuple[nx.Graph, np.ndarray]:
    """Insert ``points`` into ``graph``; returns the new graph and each point's node row (-1 when missing)."""
    new, ids = snap_points(graph, points, max_dist)
    index = {n: i for i, n in enumerate(new.nodes)}
    return new, np.array([-1 if n is None else index[n] for n in ids], dtype=np.int64)


def _one_way(
    own: nx.Graph,
    own_rows: np.ndarray,
    other: nx.Graph,
    other_rows: np.ndarray,
    min_path_length: float,
    strict: bool,
    max_sources: int | None,
    rng: np.random.Generator,
) -> tuple[float, int]:
    """Summed capped differences and pair count for control points of ``own`` (rows in both snapped graphs)."""
    n_cp = len(own_rows)
    if n_cp < 2:
        return 0.0, 0
    sources = np.arange(n_cp)
    if max_sources is not None and n_cp > max_sources:
        sources = np.sort(rng.choice(n_cp, size=max_sources, replace=False))
    own_arr, other_arr = graph_arrays(own), graph_arrays(other)
    own_cs = length_csgraph(own_arr.pos, own_arr.edges)
    other_cs = length_csgraph(other_arr.pos, other_arr.edges) if len(other_arr.edges) else None
    present = other_rows >= 0
    total_diff, total_pairs = 0.0, 0
    for lo in range(0, len(sources), CHUNK):
        src = sources[lo : lo + CHUNK]
        l_own = dijkstra(own_cs, directed=False, indices=own_rows[src])[:, own_rows]  # R x K
        l_other = np.full_like(l_own, np.inf)
        ok = present[src]
        if other_cs is not None and ok.any():
            d = dijkstra(other_cs, directed=False, indices=other_rows[src[ok]])
            l_other[ok] = np.where(present[None, :], d[:, np.where(present, other_rows, 0)], np.inf)
        long_enough = l_own > min_path_length if strict else l_own >= min_path_length
        valid = np.isfinite(l_own) & long_enough & (l_own > 0)
        valid[np.arange(len(src)), src] = False
        with np.errstate(invalid="ignore"):
            diff = np.minimum(1.0, np.abs(l_own - l_other) / l_own)
        diff = np.where(np.isfinite(l_other), diff, 1.0)
        total_diff += float(diff[valid].sum())
        total_pairs += int(valid.sum())
    return total_diff, total_pairs


def apls(
    preds: nx.Graph,
    target: nx.Graph,
    variant: str = "cosmiq",
    control_spacing: float | None = None,
    max_snap_dist: float | None = None,
    min_path_length: float | None = None,
    max_sources: int | None = 500,
    seed: int = 0,
) -> APLSResult:
    """APLS between a predicted and a ground-truth road graph.

    Args:
        preds: predicted graph (``pos`` in the units of the parameters: metres for CosmiQ's defaults); may be empty
            (APLS 0).
        target: ground-truth graph; must have an edge.
        variant: ``"cosmiq"`` (harmonic mean, projection onto edges) or ``"sat2graph"`` (see module doc).
        control_spacing: distance between control points along roads (default 50).
        max_snap_dist: snapping distance of control points onto the other graph (cosmiq 4, sat2graph 10).
        min_path_length: GT paths shorter than this are skipped (cosmiq 10, ``>=``; sat2graph 100, ``>``).
        max_sources: at most this many path sources per direction (seeded draw); ``None`` = all control points.
        seed: seed of the source draw.
    """
    if variant not in VARIANTS:
        raise ValueError(f"`variant` must be one of {VARIANTS}, got {variant!r}")
    opts = dict(_DEFAULTS[variant])
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
    sat = variant == "sat2graph"
    combine = "arithmetic" if sat else "harmonic"
    if pred.number_of_edges() == 0:
        return APLSResult(0.0, 0.0, 0.0, 0.0, 0, 0.0, 0)
    cp_gt = control_points(gt, opts["control_spacing"])
    cp_pred = control_points(pred, opts["control_spacing"])
    snap = opts["max_snap_dist"]
    own = 1e-6  # own control points lie on the graph
    # each graph receives its own control points (exactly on it) and the other's (within the snapping distance)
    gt2, rows_gt_own = _snap_rows(gt, cp_gt, own)
    gt2, rows_gt_other = _snap_rows(gt2, cp_pred, snap)
    pred2, rows_pred_own = _snap_rows(pred, cp_pred, own)
    pred2, rows_pred_other = _snap_rows(pred2, cp_gt, snap)
    # rows of the first insertion stay valid: snap_points only appends nodes
    rng = np.random.default_rng(seed)
    d_gp, n_gp = _one_way(gt2, rows_gt_own, pred2, rows_pred_other, opts["min_path_length"], sat, max_sources, rng)
    d_pg, n_pg = _one_way(pred2, rows_pred_own, gt2, rows_gt_other, opts["min_path_length"], sat, max_sources, rng)
    value, c_gp, c_pg = apls_scores(d_gp, n_gp, d_pg, n_pg, combine)
    return APLSResult(value, c_gp, c_pg, d_gp, n_gp, d_pg, n_pg)


class AveragePathLengthSimilarity(Metric):
    """Accumulates APLS path differences and pair counts over tiles (sum-reduced).

    ``compute`` returns the one-way scores from the pooled sums and their harmonic (or, for ``sat2graph``,
    arithmetic) mean, plus ``mean_apls``: the mean of the per-tile APLS values (SpaceNet's protocol).
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

    def __init__(self, variant: str = "cosmiq", max_sources: int | None = 500, seed: int = 0, **kwargs: object) -> None:
        options = {k: kwargs.pop(k) for k in ("control_spacing", "max_snap_dist", "min_path_length") if k in kwargs}
        super().__init__(**kwargs)
        if variant not in VARIANTS:
            raise ValueError(f"`variant` must be one of {VARIANTS}, got {variant!r}")
        self.options = {"variant": variant, "max_sources": max_sources, "seed": seed, **options}
        for name in ("diff_gt_to_pred", "pairs_gt_to_pred", "diff_pred_to_gt", "pairs_pred_to_gt", "apls_sum"):
            self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tiles", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add one graph pair or a batch of pairs."""
        for p, t in graph_pairs(preds, target):
            r = apls(p, t, **self.options)
            self.diff_gt_to_pred += r.diff_gt_to_pred
            self.pairs_gt_to_pred += r.pairs_gt_to_pred
            self.diff_pred_to_gt += r.diff_pred_to_gt
            self.pairs_pred_to_gt += r.pairs_pred_to_gt
            self.apls_sum += r.apls
            self.tiles += 1

    def compute(self) -> dict[str, Tensor]:
        """Pooled APLS and one-way scores, and the mean per-tile APLS."""
        combine = "arithmetic" if self.options["variant"] == "sat2graph" else "harmonic"
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

    def plot(self, val: dict[str, Tensor] | Sequence[dict[str, Tensor]] | None = None, ax: Any = None) -> Any:
        """Plot the scores (or their sequence over epochs) with matplotlib; returns ``(fig, ax)``."""
        return plot_metric(self, val, ax)
