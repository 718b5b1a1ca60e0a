"""Road-network metrics on graphs (RoadTracer / SpaceNet / Sat2Graph / UrbanLaneGraph data).

One representation: an undirected :class:`networkx.Graph` whose nodes carry ``pos = (x, y)`` (pixels, or metres).
Readers are in :mod:`drivemetrics.graph.io`, shared geometry in :mod:`drivemetrics.graph.geometry`.
"""

from __future__ import annotations

from drivemetrics.graph.geometry import (
    GraphArrays,
    Projection,
    SegmentIndex,
    control_nodes,
    crop,
    densify,
    densify_arrays,
    endpoints,
    graph_arrays,
    graph_from_arrays,
    graph_length,
    junctions,
    match_points,
    max_matching_min_cost,
    project_points,
    resample_chains,
    road_chains,
    snap_points,
    validate_graph,
)
from drivemetrics.graph.io import (
    UnsafePickleError,
    read_geojson,
    read_graph,
    read_networkx_pickle,
    read_roadtracer_graph,
    read_sat2graph_pickle,
    safe_pickle_load,
    to_graph,
    write_roadtracer_graph,
)
from drivemetrics.graph.metrics import OptG, OptJ, OptP
from drivemetrics.graph.opt_g import OptGResult, opt_g
from drivemetrics.graph.opt_j import OptJResult, opt_j
from drivemetrics.graph.opt_p import OptPResult, decompose_into_paths, opt_p

__all__ = [
    "GraphArrays",
    "OptG",
    "OptGResult",
    "OptJ",
    "OptJResult",
    "OptP",
    "OptPResult",
    "Projection",
    "SegmentIndex",
    "UnsafePickleError",
    "control_nodes",
    "crop",
    "decompose_into_paths",
    "densify",
    "densify_arrays",
    "endpoints",
    "graph_arrays",
    "graph_from_arrays",
    "graph_length",
    "junctions",
    "match_points",
    "max_matching_min_cost",
    "opt_g",
    "opt_j",
    "opt_p",
    "project_points",
    "read_geojson",
    "read_graph",
    "read_networkx_pickle",
    "read_roadtracer_graph",
    "read_sat2graph_pickle",
    "resample_chains",
    "road_chains",
    "safe_pickle_load",
    "snap_points",
    "to_graph",
    "validate_graph",
    "write_roadtracer_graph",
]
