"""The Munkres (Hungarian) assignment exactly as the ``munkres`` package 1.1.4 computes it, ties included.

ONCE-3DLanes' official evaluator matches lanes with ``munkres.Munkres().compute(1 - IoU)``; many of its costs tie
(every pair with IoU 0 costs exactly 1.0), and which of the equally cheap assignments comes back decides which pairs
are then judged by distance. ``scipy.optimize.linear_sum_assignment`` (and munkres 3.0, which calls it) returns
other optima on such matrices, so ``compat="reference"`` needs the classic algorithm step by step: the same padding
of a rectangular matrix with 0, the same row reduction, the same scan orders (including 1.1.4's search for an
uncovered zero, which scans each row cyclically from the column it starts at and keeps the *last* zero it meets in
the first row that has one), the same float arithmetic. The matrices here are small (lanes of one frame), so this is
plain Python on lists, as the original.

munkres 1.1.4: (c) 2008-2020 Brian M. Clapper, Apache License 2.0; this is an independent re-implementation of its
``Munkres.compute`` (no ``DISALLOWED`` entries).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["munkres_assignment"]


def munkres_assignment(cost: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """The ``(row, column)`` pairs munkres 1.1.4's ``Munkres().compute(cost)`` returns, in its order.

    Args:
        cost: a rectangular matrix (rows of equal length, at least one row and one column) of finite numbers.

    Returns:
        ``min(rows, columns)`` pairs of a minimum-cost assignment, sorted by row then column.

    Examples:
        >>> from drivemetrics.lane3d.munkres import munkres_assignment
        >>> munkres_assignment([[1.0, 1.0], [1.0, 1.0]])  # every assignment is optimal: munkres 1.1.4 picks this one
        [(0, 0), (1, 1)]
        >>> munkres_assignment([[4.0, 1.0, 3.0], [2.0, 0.0, 5.0]])
        [(0, 1), (1, 0)]
    """
    rows = len(cost)
    cols = len(cost[0]) if rows else 0
    if rows == 0 or cols == 0:
        raise ValueError("`cost` must have at least one row and one column")
    n = max(rows, cols)
    c = [list(row) + [0] * (n - len(row)) for row in cost]
    c += [[0] * n for _ in range(n - rows)]
    state = _State(c, n)
    step = 1
    while step:
        step = state.run(step)
    return [(i, j) for i in range(rows) for j in range(cols) if state.marked[i][j] == 1]


class _State:
    """The algorithm's matrices and covers; :meth:`run` does one numbered step and returns the next (0: done)."""

    def __init__(self, c: list[list[float]], n: int) -> None:
        self.c, self.n = c, n
        self.row_covered = [False] * n
        self.col_covered = [False] * n
        self.marked = [[0] * n for _ in range(n)]
        self.z0 = (0, 0)

    def run(self, step: int) -> int:
        return (self._reduce_rows, self._star, self._cover_starred, self._prime, self._augment, self._adjust)[
            step - 1
        ]()

    def _reduce_rows(self) -> int:  # step 1
        for row in self.c:
            low = min(row)
            for j in range(self.n):
                row[j] -= low
        return 2

    def _star(self) -> int:  # step 2: star the first uncovered zero of each row
        n = self.n
        for i in range(n):
            for j in range(n):
                if self.c[i][j] == 0 and not self.col_covered[j] and not self.row_covered[i]:
                    self.marked[i][j] = 1
                    self.col_covered[j] = True
                    self.row_covered[i] = True
                    break
        self._clear_covers()
        return 3

    def _cover_starred(self) -> int:  # step 3
        count = 0
        for i in range(self.n):
            for j in range(self.n):
                if self.marked[i][j] == 1 and not self.col_covered[j]:
                    self.col_covered[j] = True
                    count += 1
        return 0 if count >= self.n else 4

    def _prime(self) -> int:  # step 4
        row = col = 0
        while True:
            row, col = self._find_zero(row, col)
            if row < 0:
                return 6
            self.marked[row][col] = 2
            star = self._first_in_row(row, 1)
            if star < 0:
                self.z0 = (row, col)
                return 5
            col = star
            self.row_covered[row] = True
            self.col_covered[col] = False

    def _augment(self) -> int:  # step 5
        path = [self.z0]
        while True:
            row = next((i for i in range(self.n) if self.marked[i][path[-1][1]] == 1), -1)
            if row < 0:
                break
            path.append((row, path[-1][1]))
            path.append((row, self._first_in_row(row, 2)))
        for i, j in path:
            self.marked[i][j] = 0 if self.marked[i][j] == 1 else 1
        self._clear_covers()
        for row in self.marked:
            for j in range(self.n):
                if row[j] == 2:
                    row[j] = 0
        return 3

    def _adjust(self) -> int:  # step 6
        low: float = sys.maxsize
        for i in range(self.n):
            for j in range(self.n):
                if not self.row_covered[i] and not self.col_covered[j] and low > self.c[i][j]:
                    low = self.c[i][j]
        for i in range(self.n):
            for j in range(self.n):
                if self.row_covered[i]:
                    self.c[i][j] += low
                if not self.col_covered[j]:
                    self.c[i][j] -= low
        return 4

    def _find_zero(self, i0: int, j0: int) -> tuple[int, int]:
        """munkres 1.1.4's search: rows cyclically from ``i0``, each row's columns cyclically from ``j0``; the last
        uncovered zero of the first row that has one."""
        n, found = self.n, (-1, -1)
        i = i0
        while True:
            j = j0
            while True:
                if self.c[i][j] == 0 and not self.row_covered[i] and not self.col_covered[j]:
                    found = (i, j)
                j = (j + 1) % n
                if j == j0:
                    break
            i = (i + 1) % n
            if found[0] >= 0 or i == i0:
                return found

    def _first_in_row(self, row: int, mark: int) -> int:
        return next((j for j in range(self.n) if self.marked[row][j] == mark), -1)

    def _clear_covers(self) -> None:
        for k in range(self.n):
            self.row_covered[k] = False
            self.col_covered[k] = False
