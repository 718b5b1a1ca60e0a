"""Rotated BEV / 3D overlaps against an exact rational brute force (every vertex candidate, convex hull)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from drivemetrics.detection.box_iou import (
    bev_box_corners,
    bev_intersection_area,
    bev_overlap,
    box2d_overlap,
    box3d_overlap,
    convex_polygon_intersection_area,
    polygon_area,
)


def _corners_exact(box):
    """Corners of a BEV box as Fractions of the float64 values (rotation as the C++ toPolygon)."""
    x, z, l, w, ry = box
    cos, sin = math.cos(ry), math.sin(ry)
    out = []
    for sl, sw in ((1, 1), (-1, 1), (-1, -1), (1, -1)):
        lx, lz = sl * abs(l) / 2, sw * abs(w) / 2
        out.append((Fraction(cos * lx + sin * lz + x), Fraction(-sin * lx + cos * lz + z)))
    return out


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _inside(point, poly):
    """Inside or on the boundary of a convex polygon (either orientation)."""
    signs = [_cross(poly[i], poly[(i + 1) % len(poly)], point) for i in range(len(poly))]
    return all(s >= 0 for s in signs) or all(s <= 0 for s in signs)


def _segment_intersections(p1, p2, q1, q2):
    d = (p2[0] - p1[0]) * (q2[1] - q1[1]) - (p2[1] - p1[1]) * (q2[0] - q1[0])
    if d == 0:  # parallel: shared points are polygon vertices, already collected
        return []
    t = ((q1[0] - p1[0]) * (q2[1] - q1[1]) - (q1[1] - p1[1]) * (q2[0] - q1[0])) / d
    u = ((q1[0] - p1[0]) * (p2[1] - p1[1]) - (q1[1] - p1[1]) * (p2[0] - p1[0])) / d
    if 0 <= t <= 1 and 0 <= u <= 1:
        return [(p1[0] + t * (p2[0] - p1[0]), p1[1] + t * (p2[1] - p1[1]))]
    return []


def _hull_area(points):
    pts = sorted(set(points))
    if len(pts) < 3:
        return Fraction(0)
    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and _cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and _cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    hull = lower[:-1] + upper[:-1]
    return abs(sum(_cross((0, 0), hull[i], hull[(i + 1) % len(hull)]) for i in range(len(hull)))) / 2


def brute_force_area(box_a, box_b) -> float:
    a, b = _corners_exact(box_a), _corners_exact(box_b)
    points = [p for p in a if _inside(p, b)] + [p for p in b if _inside(p, a)]
    for i in range(4):
        for j in range(4):
            points += _segment_intersections(a[i], a[(i + 1) % 4], b[j], b[(j + 1) % 4])
    return float(_hull_area(points))


def _t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_identical_rotated_boxes_have_iou_one():
    """The float32 CUDA kernel of the Python ports gives 0 and 0.333 for these two (reference notes 3.3)."""
    boxes = _t([[0, 0, 4, 2, 0.3], [5, 5, 3.9, 1.6, 1.57], [12.5, 40.1, 4.2, 1.7, -2.9], [-3, 7, 0.8, 0.6, math.pi]])
    torch.testing.assert_close(bev_overlap(boxes, boxes), torch.ones(4, dtype=torch.float64), rtol=0, atol=1e-12)
    b3 = _t([[1, 1.6, 20, 1.5, 1.6, 3.9, 0.7], [-4, 2.0, 35, 1.8, 0.6, 0.8, -1.2]])
    torch.testing.assert_close(box3d_overlap(b3, b3), torch.ones(2, dtype=torch.float64), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("box_a", "box_b"),
    [
        ([0, 0, 4, 2, 0.0], [4, 0, 4, 2, 0.0]),  # touching along an edge
        ([0, 0, 4, 2, 0.0], [4, 2, 4, 2, 0.0]),  # touching at a corner
        ([0, 0, 4, 2, 0.4], [0, 0, 1, 0.5, 1.1]),  # nested
        ([0, 0, 4, 2, 0.0], [0, 0, 2, 4, math.pi / 2]),  # identical, described differently
        ([0, 0, 4, 2, 0.0], [1, 0, 4, 2, 0.0]),  # collinear edges
        ([0, 0, 4, 2, 0.3], [0.5, 0.2, 4, 2, 0.3 + math.pi]),  # parallel edges
        ([0, 0, 0, 2, 0.3], [0, 0, 4, 2, 0.3]),  # degenerate: zero length
        ([0, 0, 0, 0, 0.0], [0, 0, 0, 0, 0.0]),  # degenerate: a point
        ([0, 0, 4, 2, 0.7], [1.0, 0.5, 3, 3, -0.2]),  # generic
        ([0, 0, 4, 2, 0.0], [100, 100, 4, 2, 0.0]),  # far apart
        ([1000.3, -700.1, 4, 2, 0.2], [1000.4, -700.0, 4, 2, 0.25]),  # far from the origin
    ],
)
def test_intersection_area_equals_exact_brute_force(box_a, box_b):
    got = bev_intersection_area(_t(box_a), _t(box_b)).item()
    assert got == pytest.approx(brute_force_area(box_a, box_b), abs=1e-9)
    swapped = bev_intersection_area(_t(box_b), _t(box_a)).item()
    assert swapped == pytest.approx(got, abs=1e-9)


def test_random_pairs_match_brute_force_batched():
    gen = torch.Generator().manual_seed(0)
    n = 150
    a = torch.cat([torch.rand(n, 2, generator=gen) * 4, 0.2 + torch.rand(n, 2, generator=gen) * 4], 1)
    b = torch.cat([torch.rand(n, 2, generator=gen) * 4, 0.2 + torch.rand(n, 2, generator=gen) * 4], 1)
    a = torch.cat([a, (torch.rand(n, 1, generator=gen) - 0.5) * 7], 1).double()
    b = torch.cat([b, (torch.rand(n, 1, generator=gen) - 0.5) * 7], 1).double()
    got = bev_intersection_area(a, b)
    expected = torch.tensor(
        [brute_force_area(x.tolist(), y.tolist()) for x, y in zip(a, b, strict=True)], dtype=torch.float64
    )
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-9)
    assert (expected > 0).sum() > n // 3  # most pairs do intersect
    # pairwise matrix = element-wise on pairs
    matrix = bev_intersection_area(a[:10, None], b[None, :7])
    torch.testing.assert_close(matrix[3, 5], got.new_tensor(brute_force_area(a[3].tolist(), b[5].tolist())))


def test_bev_and_3d_iou_definitions():
    a = _t([0, 0, 4, 2, 0.0])
    b = _t([1, 0, 4, 2, 0.0])  # BEV intersection 3 x 2 = 6, union 10
    assert bev_overlap(a, b).item() == pytest.approx(0.6)
    assert bev_overlap(a, b, criterion=0).item() == pytest.approx(0.75)
    # 3D: x, y (bottom), z, h, w, l, ry; heights [-2, 0] and [-3, -1]: overlap 1 m
    a3 = _t([0, 0, 0, 2, 2, 4, 0.0])
    b3 = _t([1, -1, 0, 2, 2, 4, 0.0])
    assert box3d_overlap(a3, b3).item() == pytest.approx(6 / (16 + 16 - 6))
    assert box3d_overlap(a3, b3, criterion=1).item() == pytest.approx(6 / 16)
    disjoint = _t([1, -2, 0, 2, 2, 4, 0.0])  # spans [-4, -2]: touches a's top only
    assert box3d_overlap(a3, disjoint).item() == 0.0
    degenerate = _t([0, 0, 0, 0, 2, 4, 0.0])
    assert box3d_overlap(degenerate, degenerate).item() == 0.0


def test_box2d_overlap_is_cpp_image_box_overlap():
    a = _t([[0, 0, 10, 10]])
    b = _t([[5, 0, 15, 10], [10, 0, 20, 10], [0, 0, 5, 5]])
    torch.testing.assert_close(box2d_overlap(a, b), _t([50 / 150, 0.0, 0.25]))
    torch.testing.assert_close(box2d_overlap(a, b, criterion=0), _t([0.5, 0.0, 0.25]))
    torch.testing.assert_close(box2d_overlap(a, b, criterion=1), _t([0.5, 0.0, 1.0]))
    with pytest.raises(ValueError, match="criterion"):
        box2d_overlap(a, b, criterion=2)
    with pytest.raises(ValueError, match="boxes_a"):
        box2d_overlap(a[:, :3], b)


def test_corners_are_counter_clockwise_and_polygon_area():
    corners = bev_box_corners(_t([[3, 4, 4, 2, 0.9], [0, 0, -4, 2, 0.1]]))
    torch.testing.assert_close(polygon_area(corners), _t([8.0, 8.0]))
    square = _t([[0, 0], [2, 0], [2, 2], [0, 2]])
    shifted = square + 1
    assert convex_polygon_intersection_area(square, shifted).item() == pytest.approx(1.0)


def test_gradcheck_generic_position():
    boxes_a = _t([[0.0, 0.0, 4.0, 2.0, 0.3]]).requires_grad_()
    boxes_b = _t([[0.7, 0.4, 3.5, 1.8, -0.2]]).requires_grad_()
    assert torch.autograd.gradcheck(bev_overlap, (boxes_a, boxes_b))


BOX = [0.0, 0.0, 4.0, 2.0, 0.3]
DEGENERATE = [
    [0.0, 0.0, 0.0, 0.0, 0.0],  # a point at the box's center
    [0.3, -0.2, 0.0, 0.0, 1.0],  # a point inside, off-center
    [0.0, 0.0, 0.0, 2.0, 0.3],  # zero length: a segment across the box
    [0.0, 0.0, 4.0, 0.0, 0.3],  # zero width: a segment along the box's axis
    [0.1, 0.2, 0.0, 3.0, 1.1],  # zero length, crossing the box's edges
]


@pytest.mark.parametrize("degenerate", DEGENERATE)
def test_zero_area_box_intersects_nothing_in_both_orders(degenerate):
    """A point clipped nothing away: ``(box, point)`` used to give area 8 and BEV IoU ~4.5e15."""
    box, deg = _t(BOX), _t(degenerate)
    for a, b in ((box, deg), (deg, box)):
        assert bev_intersection_area(a, b).item() == 0.0
        for criterion in (-1, 0, 1):
            assert bev_overlap(a, b, criterion=criterion).item() == 0.0
    corners_box, corners_deg = bev_box_corners(box), bev_box_corners(deg)
    assert convex_polygon_intersection_area(corners_box, corners_deg).item() <= 1e-12
    assert convex_polygon_intersection_area(corners_deg, corners_box).item() <= 1e-12
    # 3D: x, y, z, h, w, l, ry with the BEV footprint (x, z, l, w, ry)
    box3 = _t([BOX[0], 1.6, BOX[1], 1.5, BOX[3], BOX[2], BOX[4]])
    deg3 = _t([degenerate[0], 1.6, degenerate[1], 1.5, degenerate[3], degenerate[2], degenerate[4]])
    for a, b in ((box3, deg3), (deg3, box3)):
        for criterion in (-1, 0, 1):
            assert box3d_overlap(a, b, criterion=criterion).item() == 0.0


def test_zero_area_boxes_together_give_zero_not_nan():
    point = _t([0.0, 0.0, 0.0, 0.0, 0.0])
    segment = _t([0.0, 0.0, 0.0, 2.0, 0.0])
    for a, b in ((point, point), (segment, segment), (point, segment)):
        assert bev_overlap(a, b).item() == 0.0
    flat = _t([0.0, 1.6, 0.0, 0.0, 1.6, 3.9, 0.2])  # zero height: zero volume
    assert box3d_overlap(flat, flat).item() == 0.0
    assert box3d_overlap(flat, _t([0.0, 1.6, 0.0, 1.5, 1.6, 3.9, 0.2])).item() == 0.0


def _random_boxes(gen: torch.Generator, n: int) -> torch.Tensor:
    """BEV boxes with centers in [0, 4)^2, sizes in [0, 4) (a quarter of them with l or w exactly 0)."""
    size = torch.rand(n, 2, generator=gen) * 4
    size[torch.rand(n, 2, generator=gen) < 0.125] = 0.0
    center = torch.rand(n, 2, generator=gen) * 4
    yaw = (torch.rand(n, 1, generator=gen) - 0.5) * 7
    return torch.cat([center, size, yaw], 1).double()


def test_random_pairs_are_symmetric_and_bounded_by_the_smaller_area():
    gen = torch.Generator().manual_seed(1)
    a, b = _random_boxes(gen, 400), _random_boxes(gen, 400)
    inter, swapped = bev_intersection_area(a, b), bev_intersection_area(b, a)
    torch.testing.assert_close(inter, swapped, rtol=0, atol=1e-12)
    smaller = torch.minimum((a[:, 2] * a[:, 3]).abs(), (b[:, 2] * b[:, 3]).abs())
    assert (inter <= smaller).all()
    assert (inter >= 0).all()
    assert (inter[smaller == 0] == 0).all()
    assert (smaller == 0).sum() > 40  # both kinds of pair are drawn
    assert (inter > 0).sum() > 100
    for criterion in (-1, 0, 1):
        overlap = bev_overlap(a, b, criterion=criterion)
        assert ((overlap >= 0) & (overlap <= 1)).all()
        if criterion == -1:
            torch.testing.assert_close(overlap, bev_overlap(b, a), rtol=0, atol=1e-12)
    # 3D: random heights and bottoms on top of the BEV footprints
    h_a, h_b = torch.rand(400, 1, generator=gen).double() * 2, torch.rand(400, 1, generator=gen).double() * 2
    y_a, y_b = torch.rand(400, 1, generator=gen).double(), torch.rand(400, 1, generator=gen).double()
    a3 = torch.cat([a[:, :1], y_a, a[:, 1:2], h_a, a[:, 3:4], a[:, 2:3], a[:, 4:]], 1)
    b3 = torch.cat([b[:, :1], y_b, b[:, 1:2], h_b, b[:, 3:4], b[:, 2:3], b[:, 4:]], 1)
    iou3 = box3d_overlap(a3, b3)
    torch.testing.assert_close(iou3, box3d_overlap(b3, a3), rtol=0, atol=1e-12)
    assert ((iou3 >= 0) & (iou3 <= 1)).all()
    assert (iou3[smaller == 0] == 0).all()
