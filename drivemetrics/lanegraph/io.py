"""Reading UrbanLaneGraph annotation and submission pickles (restricted unpickler)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from drivemetrics._internal.limits import get_limits, how_to_raise, short_repr
from drivemetrics._internal.safe_pickle import safe_pickle_load

__all__ = ["load_lanegraph_pickle"]


def load_lanegraph_pickle(path: str | Path, what: str = "file") -> dict:
    """``R[city][split][sample_id] -> nx.DiGraph`` from a pickle, read with the restricted unpickler.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming ``what`` / the file when the content is
    not nested dicts of graphs.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    data = safe_pickle_load(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a dict R[city][split][sample_id] -> nx.DiGraph, got {type(data).__name__}")
    for city, splits in data.items():
        if not isinstance(splits, dict):
            raise ValueError(f"{path}: R[{short_repr(city)}] must be a dict of splits, got {type(splits).__name__}")
        for split, samples in splits.items():
            if not isinstance(samples, dict):
                raise ValueError(f"{path}: R[{short_repr(city)}][{short_repr(split)}] must be a dict of samples")
            for sample_id, graph in samples.items():
                if not isinstance(graph, nx.DiGraph):
                    raise ValueError(
                        f"{path}: R[{short_repr(city)}][{short_repr(split)}][{short_repr(sample_id)}] must be a "
                        "networkx.DiGraph, "
                        f"got {type(graph).__name__}"
                    )
    samples = sum(len(samples) for splits in data.values() for samples in splits.values())
    per_mb = get_limits().max_samples_per_mb
    allowed = 1_000 + per_mb * path.stat().st_size // 1_000_000  # 561 samples in 1.4 MB in the real pickles
    if samples > allowed:  # shared graphs: a small pickle of many samples, each evaluated again
        raise ValueError(
            f"{path}: {samples:,} samples in {path.stat().st_size:,} bytes, more than 1,000 + "
            f"max_samples_per_mb={per_mb:,} per MB = {allowed:,} ({how_to_raise('max_samples_per_mb')})"
        )
    return data
