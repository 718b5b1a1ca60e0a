"""Road-network metrics on graphs (RoadTracer / SpaceNet / Sat2Graph / UrbanLaneGraph data).

One representation: an undirected :class:`networkx.Graph` whose nodes carry ``pos = (x, y)`` (pixels, or metres).
Readers are in :mod:`drivemetrics.graph.io`, shared geometry in :mod:`drivemetrics.graph.geometry`.

Functionals share their module's name (``opt_p``, ``opt_j``, ``opt_g``, ``apls``, ``ccq``, ``tlts``, ``junct``,
``subg``, ``perturb``): ``drivemetrics.graph.apls`` is the function. Reach a module's other names with
``from drivemetrics.graph.apls import VARIANTS`` (or ``importlib.import_module``), not by attribute.
"""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "apls": "drivemetrics.graph.apls",
    "APLSResult": "drivemetrics.graph.apls",
    "AveragePathLengthSimilarity": "drivemetrics.graph.apls",
    "ccq": "drivemetrics.graph.ccq",
    "ccq_graph": "drivemetrics.graph.ccq",
    "CCQResult": "drivemetrics.graph.ccq",
    "control_nodes": "drivemetrics.graph.geometry",
    "CorrectnessCompletenessQuality": "drivemetrics.graph.ccq",
    "crop": "drivemetrics.graph.geometry",
    "crop_protocol": "drivemetrics.graph.evaluate",
    "decompose_into_paths": "drivemetrics.graph.opt_p",
    "densify": "drivemetrics.graph.geometry",
    "densify_arrays": "drivemetrics.graph.geometry",
    "endpoints": "drivemetrics.graph.geometry",
    "evaluate_dataset": "drivemetrics.graph.evaluate",
    "evaluate_pair": "drivemetrics.graph.evaluate",
    "graph_arrays": "drivemetrics.graph.geometry",
    "graph_from_arrays": "drivemetrics.graph.geometry",
    "graph_length": "drivemetrics.graph.geometry",
    "GraphArrays": "drivemetrics.graph.geometry",
    "junct": "drivemetrics.graph.junct",
    "JunctionMetric": "drivemetrics.graph.junct",
    "junctions": "drivemetrics.graph.geometry",
    "JUNCTResult": "drivemetrics.graph.junct",
    "match_points": "drivemetrics.graph.geometry",
    "max_matching_min_cost": "drivemetrics.graph.geometry",
    "opt_g": "drivemetrics.graph.opt_g",
    "opt_j": "drivemetrics.graph.opt_j",
    "opt_p": "drivemetrics.graph.opt_p",
    "OptG": "drivemetrics.graph.metrics",
    "OptGResult": "drivemetrics.graph.opt_g",
    "OptJ": "drivemetrics.graph.metrics",
    "OptJResult": "drivemetrics.graph.opt_j",
    "OptP": "drivemetrics.graph.metrics",
    "OptPResult": "drivemetrics.graph.opt_p",
    "perturb": "drivemetrics.graph.perturb",
    "PERTURBATIONS": "drivemetrics.graph.perturb",
    "project_points": "drivemetrics.graph.geometry",
    "Projection": "drivemetrics.graph.geometry",
    "read_geojson": "drivemetrics.graph.io",
    "read_graph": "drivemetrics.graph.io",
    "read_networkx_pickle": "drivemetrics.graph.io",
    "read_roadtracer_graph": "drivemetrics.graph.io",
    "read_sat2graph_pickle": "drivemetrics.graph.io",
    "resample_chains": "drivemetrics.graph.geometry",
    "road_chains": "drivemetrics.graph.geometry",
    "run_sensitivity": "drivemetrics.graph.sensitivity",
    "safe_pickle_load": "drivemetrics.graph.io",
    "SegmentIndex": "drivemetrics.graph.geometry",
    "snap_points": "drivemetrics.graph.geometry",
    "subg": "drivemetrics.graph.subg",
    "SubgraphMetric": "drivemetrics.graph.subg",
    "SUBGResult": "drivemetrics.graph.subg",
    "tlts": "drivemetrics.graph.tlts",
    "TLTSResult": "drivemetrics.graph.tlts",
    "to_graph": "drivemetrics.graph.io",
    "TooLongTooShort": "drivemetrics.graph.tlts",
    "translate": "drivemetrics.graph.geometry",
    "UnsafePickleError": "drivemetrics.graph.io",
    "validate_graph": "drivemetrics.graph.geometry",
    "write_roadtracer_graph": "drivemetrics.graph.io",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
