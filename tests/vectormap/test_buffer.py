"""The shapely-free buffer prefilter on contrived geometry (flat caps, mitre joins, ring holes)."""

from __future__ import annotations

import torch

from drivemetrics.vectormap.buffer import buffer_pieces, buffers_intersect


def pair(a, b, distance=2.0):
    a_t = torch.tensor([a], dtype=torch.float64)
    b_t = torch.tensor([b], dtype=torch.float64)
    return bool(buffers_intersect(a_t, torch.tensor([len(a)]), b_t, torch.tensor([len(b)]), distance=distance)[0])


def test_flat_caps_end_to_end():
    # collinear lines: the buffers end at the end points (flat caps), whatever the distance
    assert not pair([[0.0, 0.0], [1.0, 0.0]], [[1.0001, 0.0], [2.0, 0.0]])
    assert pair([[0.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [2.0, 0.0]])  # touching counts
    # side by side, 3.99 m apart: the 2 m buffers overlap; 4.01 m: they do not
    assert pair([[0.0, 0.0], [1.0, 0.0]], [[0.0, 3.99], [1.0, 3.99]])
    assert not pair([[0.0, 0.0], [1.0, 0.0]], [[0.0, 4.01], [1.0, 4.01]])


def test_caps_end_exactly_at_the_end_point():
    # A's buffer spans x in [0, 2] (flat caps); B is vertical at x = 2.5, its buffer spans [2.5 - w, 2.5 + w]
    a, b = [[0.0, 0.0], [2.0, 0.0]], [[2.5, -3.0], [2.5, 3.0]]
    assert not pair(a, b, 0.49)
    assert pair(a, b, 0.5)  # touching at x = 2
    assert pair(a, b, 0.51)


def test_mitre_join_reaches_further_than_the_rectangles():
    # a right-angle corner at (0, 0); the mitre point of a 1 m buffer is (1, -1) on the outer side
    corner = [[-5.0, 0.0], [0.0, 0.0], [0.0, 5.0]]
    # a probe along the diagonal from (3, -3), its flat cap on the line x - y = c: the rectangles of the corner
    # reach x - y = 1 only, the mitre square [0, 1] x [-1, 0] reaches x - y = 2 at its tip (1, -1)
    assert pair(corner, [[3.0, -3.0], [0.8, -0.8]], 1.0)  # c = 1.6: only the mitre join meets it
    assert not pair(corner, [[3.0, -3.0], [1.1, -1.1]], 1.0)  # c = 2.2
    assert pair(corner, [[3.0, -3.0], [1.0, -1.0]], 1.0)  # c = 2: touches the tip
    pieces = buffer_pieces(torch.tensor(corner, dtype=torch.float64), 1.0)
    assert pieces.shape[0] == 3  # two rectangles and one join
    assert torch.allclose(pieces[2, 2], torch.tensor([1.0, -1.0], dtype=torch.float64))


def test_ring_buffer_has_a_hole_and_zero_length_lines_are_empty():
    ring = [[-5.0, -5.0], [5.0, -5.0], [5.0, 5.0], [-5.0, 5.0], [-5.0, -5.0]]
    assert not pair(ring, [[-0.5, 0.0], [0.5, 0.0]], 1.0)  # a short line in the middle of the hole
    assert pair(ring, [[-0.5, 0.0], [4.5, 0.0]], 1.0)
    assert not pair([[1.0, 1.0], [1.0, 1.0]], [[0.0, 1.0], [2.0, 1.0]])  # collapsed line: empty buffer
