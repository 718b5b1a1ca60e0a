"""Correctness, completeness and quality (CCQ) of road center lines (Wiedemann et al., 1998).

Relaxed precision / recall / IoU of one-pixel-wide center lines: a predicted pixel is correct when a ground-truth
pixel lies within ``slack`` pixels of it (Euclidean distance between pixel centers, ``<=``), a ground-truth pixel
is complete when a predicted pixel lies within ``slack`` of it.

- :func:`ccq_counts` / :func:`ccq` work on batches of skeleton images ``(B, H, W)`` (any device; the relaxed match
  is an exact disc dilation built from ``2 * slack + 1`` one-dimensional max-pools);
- :func:`render_graph` draws a road graph's center lines into such an image; :func:`ccq_graph` renders a pair of
  graphs on a common canvas and scores them. The default follows the released RoadTracer protocol of Citraro et
  al. (render at scale 1/4 with thickness 1, slack 8 px at full resolution = 2 px on the canvas);
- :class:`CCQMetrics` accumulates the four pixel counts over tiles (sum-reduced).

``compat="reference"`` renders as the released examples do (``render_segments``: end points scaled, rounded to the
nearest integer, half to even, then drawn with PIL's ``ImageDraw.line`` of width 1), which gives the released pixel
counts exactly. Its default canvas is the released one: origin ``(0, 0)`` and the tile the graphs were cut to, side
``int(side * scale)`` (the ``"tile"`` graph attribute set by :func:`drivemetrics.roadnet.evaluate.crop_protocol`);
without that attribute a square from the origin up to ``ceil(max coordinate * scale)`` (the released crop can put
boundary nodes outside the tile, so this can differ from the released count). The default mode draws each end point
in the pixel that contains it (``floor``): a pixel ``(row, col)`` covers ``[row, row + 1) x [col, col + 1)``, while
rounding moves every line by up to half a pixel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.compat import Compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph, check_same_shape, check_shape, check_tensor
from drivemetrics.graph.geometry import (
    check_compat,
    graph_arrays,
    graph_pairs,
    index_in_group,
    result_tensors,
    validate_graph,
)

__all__ = [
    "CCQCompleteness",
    "CCQCorrectness",
    "CCQMetrics",
    "CCQQuality",
    "CCQResult",
    "ccq",
    "ccq_counts",
    "ccq_graph",
    "ccq_scores",
    "check_canvas",
    "disc_dilation",
    "reference_canvas",
    "render_graph",
    "render_graph_reference",
]


@dataclass(frozen=True)
class CCQResult:
    """CCQ scores and the pixel counts they come from (counts are what aggregates over tiles)."""

    correctness: float
    completeness: float
    quality: float
    matched_pred: int
    total_pred: int
    matched_gt: int
    total_gt: int


def ccq_scores(
    matched_pred: float, total_pred: float, matched_gt: float, total_gt: float
) -> tuple[float, float, float]:
    """``(correctness, completeness, quality)`` from counts; 0 where a denominator is 0.

    quality = 1 / (1 / correctness + 1 / completeness - 1), Wiedemann's relaxed TP / (TP + FP + FN).
    """
    corr = matched_pred / total_pred if total_pred > 0 else 0.0
    comp = matched_gt / total_gt if total_gt > 0 else 0.0
    denom = comp - comp * corr + corr
    qual = comp * corr / denom if denom > 0 and corr > 0 and comp > 0 else 0.0
    return float(corr), float(comp), float(qual)


def disc_dilation(mask: Tensor, radius: float) -> Tensor:
    """Dilate boolean ``(B, H, W)`` masks by a Euclidean disc: out[p] = any(mask[q], |p - q| <= radius)."""
    check_shape(mask, "mask", ("B", "H", "W"))
    if radius < 0:
        raise ValueError(f"`radius` must be >= 0 pixels, got {radius}")
    r = math.floor(radius + 1e-9)
    x = mask.to(torch.float32)
    if r == 0:
        return mask.bool()
    out = torch.zeros_like(x)
    h = x.shape[1]
    for dy in range(-r, r + 1):
        half = math.floor(math.sqrt(max(radius * radius - dy * dy, 0.0)) + 1e-9)
        row = F.max_pool1d(x.reshape(-1, 1, x.shape[2]), 2 * half + 1, stride=1, padding=half).reshape(x.shape)
        # out[y] |= row[y + dy]
        if dy >= 0:
            out[:, : h - dy] = torch.maximum(out[:, : h - dy], row[:, dy:])
        else:
            out[:, -dy:] = torch.maximum(out[:, -dy:], row[:, : h + dy])
    return out > 0


def ccq_counts(preds: Tensor, target: Tensor, slack: float = 2.0) -> Tensor:
    """Relaxed pixel counts of skeleton images.

    Args:
        preds: ``(B, H, W)`` predicted center lines (bool or 0 / 1).
        target: ``(B, H, W)`` ground-truth center lines.
        slack: tolerance in pixels (Euclidean, inclusive).

    Returns:
        ``(B, 4)`` int64 tensor: matched predicted pixels, predicted pixels, matched GT pixels, GT pixels.
    """
    check_shape(preds, "preds", ("B", "H", "W"))
    check_tensor(target, "target")
    check_same_shape(preds, "preds", target, "target")
    for x, name in ((preds, "preds"), (target, "target")):
        if x.dtype != torch.bool and not bool(((x == 0) | (x == 1)).all()):
            raise ValueError(f"`{name}` must be a binary skeleton image (0 / 1 or bool)")
    if not slack >= 0:
        raise ValueError(f"`slack` must be >= 0 pixels, got {slack}")
    p, t = preds.bool(), target.bool()
    near_gt = disc_dilation(t, slack)
    near_pred = disc_dilation(p, slack)
    return torch.stack(
        [(p & near_gt).sum((1, 2)), p.sum((1, 2)), (t & near_pred).sum((1, 2)), t.sum((1, 2))], dim=1
    ).long()


def ccq(
    preds: Tensor | nx.Graph,
    target: Tensor | nx.Graph,
    *,
    slack: float | None = None,
    scale: float = 0.25,
    canvas: tuple[float, float, int, int] | None = None,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """CCQ of a batch of skeleton images ``(B, H, W)`` (counts summed over the batch), or of two road graphs.

    Takes what :class:`CCQMetrics` takes. Two graphs are rendered and scored as :func:`ccq_graph` does (``slack``
    in graph pixels, default 8; ``scale``, ``canvas`` and ``compat`` apply to graphs); two image tensors are scored
    directly (``slack`` in image pixels, default 2). The GT must not be empty.

    >>> import torch
    >>> from drivemetrics.functional import ccq
    >>> skeleton = torch.eye(8, dtype=torch.bool)[None]
    >>> ccq(skeleton, skeleton)["quality"]
    tensor(1., dtype=torch.float64)
    """
    if isinstance(preds, nx.Graph) or isinstance(target, nx.Graph):
        return ccq_graph(
            preds,
            target,
            slack=8.0 if slack is None else slack,
            scale=scale,
            canvas=canvas,
            compat=compat,
            validate_args=validate_args,
        )
    check_compat(compat)
    counts = ccq_counts(preds, target, 2.0 if slack is None else slack).sum(0).tolist()
    if counts[3] == 0:
        raise ValueError("`target` has no center-line pixel: CCQ needs a non-empty ground truth")
    return result_tensors(CCQResult(*ccq_scores(*counts), *(int(c) for c in counts)))


def render_graph(
    graph: nx.Graph,
    shape: tuple[int, int],
    origin: tuple[float, float] = (0.0, 0.0),
    scale: float = 1.0,
    device: torch.device | str | None = None,
) -> Tensor:
    """Draw a graph's edges as one-pixel lines into an ``(H, W)`` bool image.

    Canvas coordinates are ``u = (x - origin_x) * scale`` (column) and ``v = (y - origin_y) * scale`` (row); pixel
    ``(row, col)`` covers ``[row, row + 1) x [col, col + 1)``. Each edge is drawn like PIL's ``ImageDraw.line``
    with width 1 (what the released CCQ protocol uses): both ends go to the pixel containing them, then one pixel
    per step along the major axis (8-connected). Parts outside the canvas are dropped.
    """
    h, w = shape
    image = torch.zeros(h * w, dtype=torch.bool, device=device)
    arrays = graph_arrays(graph)
    pix = np.floor((arrays.pos - np.asarray(origin, dtype=np.float64)) * scale)
    edges = arrays.edges
    if len(edges):
        a, b = pix[edges[:, 0]], pix[edges[:, 1]]
        steps = np.maximum(np.abs(b - a).max(axis=1).astype(np.int64), 1)
        edge_of = np.repeat(np.arange(len(edges)), steps + 1)
        t = index_in_group(steps + 1) / steps[edge_of]
        pts = np.floor(a[edge_of] + t[:, None] * (b[edge_of] - a[edge_of]) + 0.5)
        pts = np.concatenate([pts, pix])
    else:
        pts = pix
    pts = pts.astype(np.int64)
    inside = (pts[:, 0] >= 0) & (pts[:, 0] < w) & (pts[:, 1] >= 0) & (pts[:, 1] < h)
    flat = torch.as_tensor(pts[inside, 1] * w + pts[inside, 0], device=device)
    image[flat] = True
    return image.reshape(h, w)


def render_graph_reference(
    graph: nx.Graph,
    shape: tuple[int, int],
    origin: tuple[float, float] = (0.0, 0.0),
    scale: float = 1.0,
    device: torch.device | str | None = None,
) -> Tensor:
    """Draw a graph's edges as the released ``render_segments`` does: an ``(H, W)`` bool image.

    End points ``(pos - origin) * scale`` are rounded to integers (half to even, as Python's ``round``) and every
    edge is drawn with PIL's ``ImageDraw.line`` of width 1 (parts outside the canvas are clipped by PIL).
    """
    from PIL import Image, ImageDraw

    h, w = shape
    image = Image.new("L", (int(w), int(h)), 0)
    draw = ImageDraw.Draw(image)
    arrays = graph_arrays(graph)
    pix = np.round((arrays.pos - np.asarray(origin, dtype=np.float64)) * scale).astype(np.int64)
    for a, b in zip(pix[arrays.edges[:, 0]].tolist(), pix[arrays.edges[:, 1]].tolist(), strict=True):
        draw.line(a + b, fill=255, width=1)
    return torch.as_tensor(np.asarray(image) > 0, device=device)


def _canvas(graphs: Sequence[nx.Graph], scale: float) -> tuple[tuple[int, int], tuple[float, float]]:
    """Shape and origin of a canvas covering every node of ``graphs`` with a 1-pixel margin.

    The origin is a multiple of ``1 / scale``, so pixels fall on the same grid as a canvas at the coordinate origin.
    """
    pos = np.concatenate([graph_arrays(g).pos for g in graphs])
    lo = (np.floor(pos.min(axis=0) * scale) - 1) / scale
    w, h = (np.floor((pos.max(axis=0) - lo) * scale).astype(np.int64) + 2).tolist()
    return (int(h), int(w)), (float(lo[0]), float(lo[1]))


def check_canvas(canvas: Sequence[float]) -> tuple[tuple[int, int], tuple[float, float]]:
    """``(shape, origin)`` of a canvas ``(origin_x, origin_y, height, width)``; ``ValueError`` if it is malformed."""
    if len(canvas) != 4:
        raise ValueError(f"`canvas` must be (origin_x, origin_y, height, width), got {canvas!r}")
    h, w = int(canvas[2]), int(canvas[3])
    if h < 1 or w < 1 or not all(math.isfinite(float(c)) for c in canvas[:2]):
        raise ValueError(f"`canvas` needs a finite origin and height, width >= 1, got {canvas!r}")
    return (h, w), (float(canvas[0]), float(canvas[1]))


def reference_canvas(
    graphs: Sequence[nx.Graph], scale: float, tile: Sequence[float] | None = None
) -> tuple[tuple[int, int], tuple[float, float]]:
    """The released CCQ canvas (``render_segments`` on ``size * scale`` pixels from the origin): shape and origin.

    With a ``tile = (xmin, ymin, xmax, ymax)`` (the ``"tile"`` graph attribute set by ``crop_protocol``): that tile,
    sides ``int(side * scale)`` as PIL truncates them. Otherwise a square from ``(0, 0)`` with side
    ``ceil(max coordinate of graphs * scale)``.
    """
    if tile is not None:
        if len(tile) != 4:
            raise ValueError(f"the 'tile' graph attribute must be (xmin, ymin, xmax, ymax), got {tile!r}")
        xmin, ymin, xmax, ymax = (float(v) for v in tile)
        return (max(int((ymax - ymin) * scale), 1), max(int((xmax - xmin) * scale), 1)), (xmin, ymin)
    top = max((float(graph_arrays(g).pos.max()) for g in graphs if g.number_of_nodes()), default=0.0)
    side = max(math.ceil(top * scale), 1)
    return (side, side), (0.0, 0.0)


def ccq_graph(
    preds: nx.Graph,
    target: nx.Graph,
    *,
    slack: float = 8.0,
    scale: float = 0.25,
    canvas: tuple[float, float, int, int] | None = None,
    device: torch.device | str | None = None,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """CCQ of two road graphs rendered on one canvas.

    Args:
        preds: predicted graph (node ``pos`` in pixels).
        target: ground-truth graph; must have at least one edge.
        slack: tolerance in graph pixels (8 in Citraro et al.'s protocol); ``slack * scale`` on the canvas.
        scale: canvas pixels per graph pixel (0.25 in the protocol).
        canvas: ``(origin_x, origin_y, height, width)`` of the canvas (e.g. ``(-4096, -4096, 2048, 2048)`` for a
            RoadTracer region); default: the bounding box of both graphs on the grid of multiples of ``1 / scale``,
            or with ``compat="reference"`` the released canvas (see :func:`reference_canvas`).
        device: where to render and dilate.
        compat: ``"default"`` or ``"reference"``: render as the released examples (rounded end points, PIL
            lines, no merging of nodes) on the released canvas; on graphs cut by ``crop_protocol`` (or with the
            protocol's canvas ``(0, 0, size / 4, size / 4)``) the pixel counts equal the released ones.
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import ccq_graph
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> result = ccq_graph(pred, gt)  # also the pixel counts matched_pred, total_pred, ...
        >>> {k: round(result[k].item(), 4) for k in ("correctness", "completeness", "quality")}
        {'correctness': 1.0, 'completeness': 0.7556, 'quality': 0.7556}
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    if not scale > 0:
        raise ValueError(f"`scale` must be > 0, got {scale}")
    reference = check_compat(compat)
    if canvas is not None:
        shape, origin = check_canvas(canvas)
    tiles = [g.graph.get("tile") for g in (target, preds) if isinstance(g, nx.Graph)]
    render = render_graph_reference if reference else render_graph
    target = validate_graph(target, "target", allow_empty=False, merge_duplicates=not reference)
    preds = validate_graph(preds, "preds", merge_duplicates=not reference)
    if canvas is None and reference:
        shape, origin = reference_canvas([target, preds], scale, next((t for t in tiles if t is not None), None))
    elif canvas is None:
        shape, origin = _canvas([target] + ([preds] if preds.number_of_nodes() else []), scale)
    gt_img = render(target, shape, origin, scale, device)
    pred_img = render(preds, shape, origin, scale, device) if preds.number_of_nodes() else torch.zeros_like(gt_img)
    return ccq(pred_img[None], gt_img[None], slack=slack * scale)


class CCQMetrics(MetricFamily):
    """Accumulates CCQ pixel counts over tiles; ``compute`` returns correctness, completeness and quality.

    ``update(preds, target)`` takes either two ``(B, H, W)`` skeleton-image tensors (``slack`` in image pixels)
    or two graphs / two sequences of graphs (rendered with ``scale`` on ``canvas``, as :func:`ccq_graph`; ``slack``
    in graph pixels).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.roadnet import CCQMetrics
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> metric = CCQMetrics()
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 4) for k, v in metric.compute().items()}
        {'correctness': 1.0, 'completeness': 0.7556, 'quality': 0.7556}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    matched_pred: Tensor
    total_pred: Tensor
    matched_gt: Tensor
    total_gt: Tensor

    def __init__(
        self,
        slack: float = 8.0,
        scale: float = 0.25,
        *,
        canvas: tuple[float, float, int, int] | None = None,
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        if canvas is not None:
            check_canvas(canvas)
        self.slack = slack
        self.scale = scale
        self.canvas = canvas
        self.compat = compat
        for name in ("matched_pred", "total_pred", "matched_gt", "total_gt"):
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("CCQMetrics", slack, scale, canvas, compat))

    def update(
        self, preds: Tensor | nx.Graph | Sequence[nx.Graph], target: Tensor | nx.Graph | Sequence[nx.Graph]
    ) -> None:
        """Add one batch of images or one / several graph pairs."""
        if xp.is_tensor(preds):
            counts = ccq_counts(preds, target, self.slack).sum(0)
        else:
            pairs = graph_pairs(preds, target)
            rows = []
            for p, t in pairs:
                r = ccq_graph(
                    p,
                    t,
                    slack=self.slack,
                    scale=self.scale,
                    canvas=self.canvas,
                    compat=self.compat,
                    validate_args=self.validate_args,
                )
                rows.append([int(r[k]) for k in ("matched_pred", "total_pred", "matched_gt", "total_gt")])
            counts = torch.tensor(rows, dtype=torch.long).sum(0)
        counts = counts.to(self.matched_pred.device)
        self.matched_pred = self.matched_pred + counts[0]
        self.total_pred = self.total_pred + counts[1]
        self.matched_gt = self.matched_gt + counts[2]
        self.total_gt = self.total_gt + counts[3]

    def compute(self) -> dict[str, Tensor]:
        """Correctness, completeness and quality from the summed counts."""
        corr, comp, qual = ccq_scores(
            self.matched_pred.item(), self.total_pred.item(), self.matched_gt.item(), self.total_gt.item()
        )
        return {
            "correctness": torch.tensor(corr),
            "completeness": torch.tensor(comp),
            "quality": torch.tensor(qual),
        }


class CCQCorrectness(ScalarMetric, CCQMetrics):
    """CCQ correctness (precision of predicted road pixels within the slack) (arguments as :class:`CCQMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import CCQCorrectness, roadnet_example_inputs
        >>> CCQCorrectness()(**roadnet_example_inputs())
        tensor(1.)
    """

    key = "correctness"


class CCQCompleteness(ScalarMetric, CCQMetrics):
    """CCQ completeness (recall of ground-truth road pixels within the slack) (arguments as :class:`CCQMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import CCQCompleteness, roadnet_example_inputs
        >>> CCQCompleteness()(**roadnet_example_inputs())
        tensor(0.7556)
    """

    key = "completeness"


class CCQQuality(ScalarMetric, CCQMetrics):
    """CCQ quality (``TP / (TP + FP + FN)`` of road pixels) (arguments as :class:`CCQMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import CCQQuality, roadnet_example_inputs
        >>> CCQQuality()(**roadnet_example_inputs())
        tensor(0.7556)
    """

    key = "quality"
