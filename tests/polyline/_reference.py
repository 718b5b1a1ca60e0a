"""Plain numpy / Python-loop reference implementations for the polyline kernels' tests (no torch)."""

from __future__ import annotations

import math

import numpy as np


def ref_length(line: np.ndarray) -> float:
    """Sum of segment lengths, added one by one (GEOS ``Length::ofLine``)."""
    total = 0.0
    for i in range(len(line) - 1):
        squared = 0.0
        for d in range(line.shape[1]):
            diff = float(line[i + 1, d]) - float(line[i, d])
            squared = squared + diff * diff
        total += math.sqrt(squared)
    return total


def ref_interpolate(line: np.ndarray, position: float) -> np.ndarray:
    """GEOS ``LengthIndexedLine.extractPoint``: first segment whose running end exceeds the position."""
    if len(line) == 1:
        return line[0].astype(np.float64)
    position = min(max(position, 0.0), ref_length(line))
    total = 0.0
    for i in range(len(line) - 1):
        seg = ref_length(line[i : i + 2])
        if total + seg > position:
            fraction = (position - total) / seg
            return line[i] + fraction * (line[i + 1] - line[i])
        total += seg
    return line[-1].astype(np.float64)


def ref_resample_count(line: np.ndarray, count: int) -> np.ndarray:
    return np.array([ref_interpolate(line, d) for d in np.linspace(0, ref_length(line), count)])


def ref_resample_spacing(line: np.ndarray, spacing: float) -> np.ndarray:
    length = ref_length(line)
    positions = [0.0, *list(np.arange(spacing, length, spacing)), length]
    return np.array([ref_interpolate(line, d) for d in positions])


def ref_chamfer(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Directional mean nearest distances (a -> b, b -> a), double loops."""

    def directed(x: np.ndarray, y: np.ndarray) -> float:
        total = 0.0
        for p in x:
            total += min(math.sqrt(sum((float(p[d]) - float(q[d])) ** 2 for d in range(len(p)))) for q in y)
        return total / len(x)

    return directed(a, b), directed(b, a)


def ref_greedy(dist: np.ndarray, scores: np.ndarray, threshold: float, inclusive: bool, fallback: bool) -> np.ndarray:
    """Greedy matching, predictions visited in descending score (stable), one threshold; dist (P, G)."""
    num_preds, num_targets = dist.shape
    tp = np.zeros(num_preds, dtype=bool)
    taken = np.zeros(num_targets, dtype=bool)
    order = sorted(range(num_preds), key=lambda i: -scores[i])
    for i in order:
        if num_targets == 0:
            continue
        if fallback:
            best, best_j = math.inf, -1
            for j in range(num_targets):
                ok = dist[i, j] <= threshold if inclusive else dist[i, j] < threshold
                if ok and not taken[j] and dist[i, j] < best:
                    best, best_j = dist[i, j], j
            if best_j >= 0:
                tp[i] = True
                taken[best_j] = True
        else:
            j = int(np.argmin(dist[i]))
            ok = dist[i, j] <= threshold if inclusive else dist[i, j] < threshold
            if ok and not taken[j]:
                tp[i] = True
                taken[j] = True
    return tp


def ref_voc_area(recall: np.ndarray, precision: np.ndarray) -> float:
    mrec = np.concatenate([[0.0], recall, [1.0]])
    mpre = np.concatenate([[0.0], precision, [0.0]])
    for i in range(len(mpre) - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    total = 0.0
    for i in range(len(mrec) - 1):
        if mrec[i + 1] != mrec[i]:
            total += (mrec[i + 1] - mrec[i]) * mpre[i + 1]
    return total


def ref_11point(recall: np.ndarray, precision: np.ndarray) -> float:
    total = np.float32(0.0)
    for r in np.arange(0, 1.1, 0.1):
        reached = precision[recall >= r]
        total = np.float32(total + np.float32(reached.max() if reached.size else 0.0))
    return float(total / np.float32(11))
