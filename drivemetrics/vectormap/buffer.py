"""MapTR's buffer prefilter without shapely: do the 2 m flat-cap, mitre-joined buffers of two polylines meet?

MapTR's evaluator buffers every resampled line with GEOS (``cap_style=flat``, ``join_style=mitre``, mitre limit 5)
and scores a pair only when the two buffers intersect (touching counts). The buffer of a polyline is the union of

- one rectangle per segment (the segment swept ``distance`` to both sides; flat caps end it at the end points),
- one join piece per turning vertex on the outer side: the mitre wedge ``[vertex, offset point, mitre point,
  offset point]``, or where the mitre ratio exceeds the limit, that wedge cut by the line perpendicular to the
  bisector at ``mitre_limit * distance`` from the vertex (GEOS' limited mitre),

all convex, so two buffers meet exactly when one piece of each meets (separating-axis test). A line of zero length
has an empty buffer. Not reproduced: GEOS simplifies the input line by 1 % of the distance before buffering, which
moves the boundary by less than 0.02 m near nearly straight concave vertices, and the join of a segment that
exactly reverses its predecessor.

Only pairs that can change a result are tested (see ``vector_map_matches``: a prediction's nearest GT within the
largest threshold, again after a rejection). Most are decided by a vectorised sufficient test (one of a dozen
vertices of one line strictly inside a segment rectangle of the other, both lines of positive length); the rest go
through the exact piece test.
"""

from __future__ import annotations

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_finite, check_lengths
from drivemetrics.polyline import point_mask

__all__ = ["buffer_pieces", "buffers_intersect"]


def _clean(points: Tensor) -> Tensor:
    """Drop consecutive repeated points (as GEOS does before buffering)."""
    if points.shape[0] < 2:
        return points
    keep = torch.ones(points.shape[0], dtype=torch.bool, device=points.device)
    keep[1:] = (points[1:] != points[:-1]).any(-1)
    return points[keep]


def buffer_pieces(points: Tensor, distance: float = 2.0, mitre_limit: float = 5.0) -> Tensor:
    """Convex pieces whose union is the flat-cap, mitre-joined buffer of one polyline.

    Args:
        points: ``(P, 2)`` polyline (metres), float64 recommended.
        distance: buffer distance (metres).
        mitre_limit: GEOS mitre limit (ratio of the mitre length to ``distance``).

    Returns:
        ``(S, 5, 2)`` convex polygons (vertices in order; shorter polygons repeat their last vertex); ``S = 0`` for
        a line of zero length.

    Examples:
        >>> from drivemetrics.vectormap.buffer import buffer_pieces
        >>> import torch
        >>> buffer_pieces(torch.tensor([[0.0, 0.0], [4.0, 0.0]], dtype=torch.float64), 1.0)[0, :4].tolist()
        [[0.0, 1.0], [4.0, 1.0], [4.0, -1.0], [0.0, -1.0]]
    """
    line = _clean(points.to(torch.float64))
    if line.shape[0] < 2:
        return torch.zeros(0, 5, 2, dtype=torch.float64, device=points.device)
    seg = line[1:] - line[:-1]
    unit = seg / seg.norm(dim=-1, keepdim=True)
    normal = torch.stack([-unit[:, 1], unit[:, 0]], -1)  # left normal
    w = distance
    rects = torch.stack(
        [
            line[:-1] + w * normal,
            line[1:] + w * normal,
            line[1:] - w * normal,
            line[:-1] - w * normal,
            line[:-1] - w * normal,
        ],
        1,
    )
    if line.shape[0] < 3:
        return rects
    u1, u2 = unit[:-1], unit[1:]
    n1, n2 = normal[:-1], normal[1:]
    vertex = line[1:-1]
    cross = u1[:, 0] * u2[:, 1] - u1[:, 1] * u2[:, 0]
    cos_phi = (n1 * n2).sum(-1)
    turning = (cross != 0) & (cos_phi > -1)
    side = torch.where(cross > 0, -1.0, 1.0).to(torch.float64).unsqueeze(-1)  # outer side: right of a left turn
    o1 = vertex + side * w * n1
    o2 = vertex + side * w * n2
    mitre = vertex + side * w * (n1 + n2) / (1 + cos_phi).clamp_min(1e-300).unsqueeze(-1)
    ratio = torch.sqrt(2 / (1 + cos_phi).clamp_min(1e-300))
    # limited mitre: cut at mitre_limit * w along the bisector
    bisector = side * (n1 + n2) / (n1 + n2).norm(dim=-1, keepdim=True).clamp_min(1e-300)
    reach = w * torch.sqrt((1 + cos_phi).clamp_min(0) / 2)  # bisector coordinate of o1 and o2
    cut = mitre_limit * w
    t1 = (cut - reach) / (u1 * bisector).sum(-1).clamp_min(1e-300)
    t2 = (cut - reach) / (-(u2 * bisector).sum(-1)).clamp_min(1e-300)
    e1 = o1 + t1.unsqueeze(-1) * u1
    e2 = o2 - t2.unsqueeze(-1) * u2
    full = torch.stack([vertex, o1, mitre, o2, o2], 1)
    limited = torch.stack([vertex, o1, e1, e2, o2], 1)
    joins = torch.where((ratio <= mitre_limit)[:, None, None], full, limited)[turning]
    return torch.cat([rects, joins], 0)


def _pieces_meet(a: Tensor, b: Tensor) -> bool:
    """Whether any convex piece of ``a (Sa, 5, 2)`` meets any of ``b (Sb, 5, 2)`` (touching counts)."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return False
    # prune with bounding boxes first
    a_lo, a_hi = a.amin(1), a.amax(1)
    b_lo, b_hi = b.amin(1), b.amax(1)
    near = ((a_lo[:, None] <= b_hi[None]) & (b_lo[None] <= a_hi[:, None])).all(-1)
    ia, ib = near.nonzero(as_tuple=True)
    if ia.numel() == 0:
        return False
    pa, pb = a[ia], b[ib]  # (K, 5, 2)
    edges = torch.cat([pa.roll(-1, 1) - pa, pb.roll(-1, 1) - pb], 1)  # (K, 10, 2)
    axes = torch.stack([-edges[..., 1], edges[..., 0]], -1)
    proj_a = torch.einsum("kad,kvd->kav", axes, pa)
    proj_b = torch.einsum("kad,kvd->kav", axes, pb)
    separated = (proj_a.amax(-1) < proj_b.amin(-1)) | (proj_b.amax(-1) < proj_a.amin(-1))
    return bool((~separated.any(-1)).any())


def _inside_rectangles(points: Tensor, mask: Tensor, line: Tensor, line_lengths: Tensor, distance: float) -> Tensor:
    """``(K,)``: some valid point of ``points (K, P, 2)`` lies strictly inside a segment rectangle of ``line``."""
    # x and y apart: reductions over a last dimension of 2 are slow
    start_x, start_y = line[:, None, :-1, 0], line[:, None, :-1, 1]  # (K, 1, S)
    seg_x, seg_y = line[:, None, 1:, 0] - start_x, line[:, None, 1:, 1] - start_y
    seg_len2 = seg_x * seg_x + seg_y * seg_y
    seg_valid = point_mask((line_lengths - 1).clamp_min(0), line.shape[1] - 1) & (seg_len2[:, 0] > 0)
    rel_x, rel_y = points[:, :, 0, None] - start_x, points[:, :, 1, None] - start_y  # (K, P, S)
    t = (rel_x * seg_x + rel_y * seg_y) / seg_len2.clamp_min(1e-300)
    perp2 = (rel_x * rel_x + rel_y * rel_y) - t * t * seg_len2
    margin = 1e-9
    inside = (t > margin) & (t < 1 - margin) & (perp2 < (distance - margin) ** 2)
    inside = inside & seg_valid[:, None, :] & mask[:, :, None]
    return inside.flatten(1).any(-1)


def buffers_intersect(
    a: Tensor,
    a_lengths: Tensor,
    b: Tensor,
    b_lengths: Tensor,
    *,
    distance: float = 2.0,
    mitre_limit: float = 5.0,
    max_elements: int = 1 << 24,
    validate_args: bool = True,
) -> Tensor:
    """Whether the buffers of paired 2-D polylines ``a[k]`` and ``b[k]`` intersect (touching counts).

    Args:
        a: ``(K, P, 2)`` polylines (metres).
        a_lengths: ``(K,)`` valid point counts.
        b: ``(K, Q, 2)``.
        b_lengths: ``(K,)``.
        distance: buffer distance (MapTR: 2.0 m).
        mitre_limit: GEOS mitre limit (default 5).
        max_elements: memory bound of the vectorised pre-test (pairs are chunked).
        validate_args: refuse lengths outside ``[0, P]`` and NaN or infinite points (a read-back);
            ``False`` skips those checks.

    Returns:
        ``(K,)`` bool.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import buffers_intersect
        >>> a = torch.tensor([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]], dtype=torch.float64)
        >>> b = torch.tensor([[[1.2, 0.0], [2.2, 0.0]], [[1.0, 0.0], [2.0, 0.0]]], dtype=torch.float64)
        >>> buffers_intersect(a, torch.tensor([2, 2]), b, torch.tensor([2, 2])).tolist()  # end to end: flat caps
        [False, True]
    """
    if validate_args:
        check_lengths(a_lengths, "a_lengths", a.shape[-2])
        check_lengths(b_lengths, "b_lengths", b.shape[-2])
        check_finite(a, "a")
        check_finite(b, "b")
    num_pairs = a.shape[0]
    result = torch.zeros(num_pairs, dtype=torch.bool, device=a.device)
    if num_pairs == 0:
        return result
    a64, b64 = a.detach().to(torch.float64), b.detach().to(torch.float64)
    a_mask, b_mask = point_mask(a_lengths, a.shape[1]), point_mask(b_lengths, b.shape[1])

    def positive_length(line: Tensor, lengths: Tensor) -> Tensor:
        first = line[:, :1]
        return ((line != first).any(-1) & point_mask(lengths, line.shape[1])).any(-1)

    both = positive_length(a64, a_lengths) & positive_length(b64, b_lengths)
    # blocks in cache; with several threads below torch's grain size (2^15), so that each small operation runs in
    # the calling thread instead of opening a parallel region (which stalls whenever a core is busy)
    block = min(max_elements, 1 << 16 if torch.get_num_threads() == 1 else 1 << 15)
    # first witness: the middle point of `a` against all segment rectangles of `b` (decides most close pairs)
    rows = torch.arange(num_pairs, device=a.device)
    middle = a64[rows, ((a_lengths - 1).clamp_min(0) // 2)].unsqueeze(1)  # (K, 1, 2)
    per_pair = max(1, b.shape[1])
    chunk = max(1, block // per_pair)
    for start in range(0, num_pairs, chunk):
        s = slice(start, start + chunk)
        present = (a_lengths[s] > 0).unsqueeze(1)
        result[s] = _inside_rectangles(middle[s], present, b64[s], b_lengths[s], distance) & both[s]
    # then every `stride`-th point of one line against all segment rectangles of the other, for the rest
    open_pairs = (~result & both).nonzero().flatten()
    per_pair = max(1, a.shape[1] * b.shape[1] // 6)  # 13 witnesses of each line
    chunk = max(1, block // per_pair)
    stride_a = max(1, a.shape[1] // 12)
    stride_b = max(1, b.shape[1] // 12)
    for start in range(0, open_pairs.numel(), chunk):
        k = open_pairs[start : start + chunk]
        hit = _inside_rectangles(a64[k, ::stride_a], a_mask[k, ::stride_a], b64[k], b_lengths[k], distance)
        hit |= _inside_rectangles(b64[k, ::stride_b], b_mask[k, ::stride_b], a64[k], a_lengths[k], distance)
        result[k] = hit
    for k in (~result & both).nonzero().flatten().tolist():
        pieces_a = buffer_pieces(a64[k, : int(a_lengths[k])], distance, mitre_limit)
        pieces_b = buffer_pieces(b64[k, : int(b_lengths[k])], distance, mitre_limit)
        result[k] = _pieces_meet(pieces_a, pieces_b)
    return result
