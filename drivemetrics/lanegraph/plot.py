"""Figures of UrbanLaneGraph samples (matplotlib, imported when a figure is drawn)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from drivemetrics._internal.extras import pyplot_for_files
from drivemetrics._internal.files import atomic_save_figure
from drivemetrics._internal.limits import short_repr
from drivemetrics.lanegraph.geometry import lane_arrays

__all__ = ["figure_path", "plot_sample"]


def figure_path(folder: str | Path, sample_id: object) -> Path:
    """``folder / f"{sample_id}.png"``, refusing a sample id that would leave ``folder``.

    Sample ids come from the submission pickle: an id holding a path separator, a NUL, or ``..`` (``../../x``)
    raises ``ValueError`` rather than writing outside the figures folder.
    """
    name = str(sample_id)
    if not name or "\0" in name or "/" in name or "\\" in name or name.startswith("..") or name in (".", ".."):
        raise ValueError(
            f"sample id {short_repr(sample_id)} cannot name a figure file (path separators or '..'); "
            "rename the sample or leave out --figures"
        )
    folder = Path(folder)
    path = folder / f"{name}.png"
    if path.resolve().parent != folder.resolve():
        raise ValueError(f"sample id {short_repr(sample_id)}: the figure would leave the folder {folder}")
    return path


def plot_sample(pred: nx.DiGraph, gt: nx.DiGraph, path: str | Path, title: str = "") -> None:
    """PNG of a sample: GT (green) and prediction (red) overlaid, matched split points (SDA@20) marked."""
    plt = pyplot_for_files()

    from drivemetrics.lanegraph.sda import matched_splits

    fig, ax = plt.subplots(figsize=(5, 5))
    for graph, color, label in ((gt, "tab:green", "GT"), (pred, "tab:red", "prediction")):
        arr = lane_arrays(graph, label)
        for u, v in arr.edges.tolist():
            ax.plot(arr.pos[[u, v], 0], arr.pos[[u, v], 1], color=color, lw=1.5, alpha=0.8)
        ax.plot([], [], color=color, label=label)
    g_s, p_s = matched_splits(pred, gt, 20.0)
    if len(g_s):
        ax.scatter(g_s[:, 0], g_s[:, 1], s=60, facecolors="none", edgecolors="k", label="matched split (GT)")
        ax.scatter(p_s[:, 0], p_s[:, 1], s=20, c="k", marker="x", label="matched split (pred)")
    ax.set_aspect("equal")
    ax.invert_yaxis()
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    atomic_save_figure(fig, path, dpi=80)
    plt.close(fig)
