"""Road-network metrics on graphs (RoadTracer / SpaceNet / Sat2Graph / UrbanLaneGraph data).

One representation: an undirected :class:`networkx.Graph` whose nodes carry ``pos = (x, y)`` (pixels, or metres).
Readers are in :mod:`drivemetrics.graph.io`, shared geometry in :mod:`drivemetrics.graph.geometry`.

Functionals share their module's name (``opt_p``, ``opt_j``, ``opt_g``, ``apls``, ``ccq``, ``tlts``, ``junct``,
``subg``, ``perturb``): ``drivemetrics.graph.apls`` is the function. Reach a module's other names with
``from drivemetrics.graph.apls import VARIANTS`` (or ``importlib.import_module``), not by attribute.
"""

from __future__ import annotations

from drivemetrics.graph.apls import APLSResult, AveragePathLengthSimilarity, apls
from drivemetrics.graph.ccq import CCQResult, CorrectnessCompletenessQuality, ccq, ccq_graph
from drivemetrics.graph.evaluate import evaluate_dataset, evaluate_pair
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
from drivemetrics.graph.junct import JunctionMetric, JUNCTResult, junct
from drivemetrics.graph.metrics import OptG, OptJ, OptP
from drivemetrics.graph.opt_g import OptGResult, opt_g
from drivemetrics.graph.opt_j import OptJResult, opt_j
from drivemetrics.graph.opt_p import OptPResult, decompose_into_paths, opt_p
from drivemetrics.graph.perturb import PERTURBATIONS, perturb
from drivemetrics.graph.sensitivity import run_sensitivity
from drivemetrics.graph.subg import SubgraphMetric, SUBGResult, subg
from drivemetrics.graph.tlts import TLTSResult, TooLongTooShort, tlts

__all__ = [
    "PERTURBATIONS",
    "APLSResult",
    "AveragePathLengthSimilarity",
    "CCQResult",
    "CorrectnessCompletenessQuality",
    "GraphArrays",
    "JUNCTResult",
    "JunctionMetric",
    "OptG",
    "OptGResult",
    "OptJ",
    "OptJResult",
    "OptP",
    "OptPResult",
    "Projection",
    "SUBGResult",
    "SegmentIndex",
    "SubgraphMetric",
    "TLTSResult",
    "TooLongTooShort",
    "UnsafePickleError",
    "apls",
    "ccq",
    "ccq_graph",
    "control_nodes",
    "crop",
    "decompose_into_paths",
    "densify",
    "densify_arrays",
    "endpoints",
    "evaluate_dataset",
    "evaluate_pair",
    "graph_arrays",
    "graph_from_arrays",
    "graph_length",
    "junct",
    "junctions",
    "match_points",
    "max_matching_min_cost",
    "opt_g",
    "opt_j",
    "opt_p",
    "perturb",
    "project_points",
    "read_geojson",
    "read_graph",
    "read_networkx_pickle",
    "read_roadtracer_graph",
    "read_sat2graph_pickle",
    "resample_chains",
    "road_chains",
    "run_sensitivity",
    "safe_pickle_load",
    "snap_points",
    "subg",
    "tlts",
    "to_graph",
    "validate_graph",
    "write_roadtracer_graph",
]
