"""Brute-force references of the lane tests (numpy loops, independent of the code under test)."""

from __future__ import annotations

import itertools

import numpy as np


def brute_mask(points, height, width, radius):
    """Distance of every pixel center to every segment, numpy loops over segments (test reference)."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    mask = np.zeros((height, width), dtype=bool)
    pts = [p for p in points if not np.isnan(p).any()]
    for (ax, ay), (bx, by) in itertools.pairwise(pts):
        dx, dy = bx - ax, by - ay
        l2 = dx * dx + dy * dy
        t = np.clip(((xx - ax) * dx + (yy - ay) * dy) / l2, 0, 1) if l2 > 0 else np.zeros_like(xx)
        d2 = (xx - ax - t * dx) ** 2 + (yy - ay - t * dy) ** 2
        mask |= d2 <= radius * radius
    return mask
