"""Type stub of the lazy exports of :mod:`drivemetrics.roadnet` (kept equal to ``_EXPORTS`` by a test)."""

from drivemetrics.roadnet.apls import APLSMetrics as APLSMetrics
from drivemetrics.roadnet.apls import APLSResult as APLSResult
from drivemetrics.roadnet.apls import APLSScore as APLSScore
from drivemetrics.roadnet.apls import apls as apls
from drivemetrics.roadnet.ccq import CCQCompleteness as CCQCompleteness
from drivemetrics.roadnet.ccq import CCQCorrectness as CCQCorrectness
from drivemetrics.roadnet.ccq import CCQMetrics as CCQMetrics
from drivemetrics.roadnet.ccq import CCQQuality as CCQQuality
from drivemetrics.roadnet.ccq import CCQResult as CCQResult
from drivemetrics.roadnet.ccq import ccq as ccq
from drivemetrics.roadnet.ccq import ccq_graph as ccq_graph
from drivemetrics.roadnet.evaluate import crop_protocol as crop_protocol
from drivemetrics.roadnet.evaluate import evaluate_dataset as evaluate_dataset
from drivemetrics.roadnet.evaluate import evaluate_pair as evaluate_pair
from drivemetrics.roadnet.geometry import GraphArrays as GraphArrays
from drivemetrics.roadnet.geometry import Projection as Projection
from drivemetrics.roadnet.geometry import SegmentIndex as SegmentIndex
from drivemetrics.roadnet.geometry import control_nodes as control_nodes
from drivemetrics.roadnet.geometry import crop as crop
from drivemetrics.roadnet.geometry import densify as densify
from drivemetrics.roadnet.geometry import densify_arrays as densify_arrays
from drivemetrics.roadnet.geometry import endpoints as endpoints
from drivemetrics.roadnet.geometry import graph_arrays as graph_arrays
from drivemetrics.roadnet.geometry import graph_from_arrays as graph_from_arrays
from drivemetrics.roadnet.geometry import graph_length as graph_length
from drivemetrics.roadnet.geometry import junctions as junctions
from drivemetrics.roadnet.geometry import match_points as match_points
from drivemetrics.roadnet.geometry import max_matching_min_cost as max_matching_min_cost
from drivemetrics.roadnet.geometry import project_points as project_points
from drivemetrics.roadnet.geometry import resample_chains as resample_chains
from drivemetrics.roadnet.geometry import road_chains as road_chains
from drivemetrics.roadnet.geometry import snap_points as snap_points
from drivemetrics.roadnet.geometry import translate as translate
from drivemetrics.roadnet.geometry import validate_graph as validate_graph
from drivemetrics.roadnet.io import UnsafePickleError as UnsafePickleError
from drivemetrics.roadnet.io import read_geojson as read_geojson
from drivemetrics.roadnet.io import read_graph as read_graph
from drivemetrics.roadnet.io import read_networkx_pickle as read_networkx_pickle
from drivemetrics.roadnet.io import read_roadtracer_graph as read_roadtracer_graph
from drivemetrics.roadnet.io import read_sat2graph_pickle as read_sat2graph_pickle
from drivemetrics.roadnet.io import safe_pickle_load as safe_pickle_load
from drivemetrics.roadnet.io import to_graph as to_graph
from drivemetrics.roadnet.io import write_roadtracer_graph as write_roadtracer_graph
from drivemetrics.roadnet.junct import JunctionFCorrect as JunctionFCorrect
from drivemetrics.roadnet.junct import JunctionFError as JunctionFError
from drivemetrics.roadnet.junct import JunctionMetrics as JunctionMetrics
from drivemetrics.roadnet.junct import JUNCTResult as JUNCTResult
from drivemetrics.roadnet.junct import junct as junct
from drivemetrics.roadnet.opt_g import OptGF1Score as OptGF1Score
from drivemetrics.roadnet.opt_g import OptGMetrics as OptGMetrics
from drivemetrics.roadnet.opt_g import OptGPrecision as OptGPrecision
from drivemetrics.roadnet.opt_g import OptGRecall as OptGRecall
from drivemetrics.roadnet.opt_g import OptGResult as OptGResult
from drivemetrics.roadnet.opt_g import opt_g as opt_g
from drivemetrics.roadnet.opt_j import OptJF1Score as OptJF1Score
from drivemetrics.roadnet.opt_j import OptJMetrics as OptJMetrics
from drivemetrics.roadnet.opt_j import OptJPrecision as OptJPrecision
from drivemetrics.roadnet.opt_j import OptJRecall as OptJRecall
from drivemetrics.roadnet.opt_j import OptJResult as OptJResult
from drivemetrics.roadnet.opt_j import opt_j as opt_j
from drivemetrics.roadnet.opt_p import OptPF1Score as OptPF1Score
from drivemetrics.roadnet.opt_p import OptPMetrics as OptPMetrics
from drivemetrics.roadnet.opt_p import OptPPrecision as OptPPrecision
from drivemetrics.roadnet.opt_p import OptPRecall as OptPRecall
from drivemetrics.roadnet.opt_p import OptPResult as OptPResult
from drivemetrics.roadnet.opt_p import decompose_into_paths as decompose_into_paths
from drivemetrics.roadnet.opt_p import opt_p as opt_p
from drivemetrics.roadnet.perturb import PERTURBATIONS as PERTURBATIONS
from drivemetrics.roadnet.perturb import perturb as perturb
from drivemetrics.roadnet.sensitivity import run_sensitivity as run_sensitivity
from drivemetrics.roadnet.subg import SubgraphF1Score as SubgraphF1Score
from drivemetrics.roadnet.subg import SubgraphMetrics as SubgraphMetrics
from drivemetrics.roadnet.subg import SUBGResult as SUBGResult
from drivemetrics.roadnet.subg import subg as subg
from drivemetrics.roadnet.tlts import TLTSAccuracy as TLTSAccuracy
from drivemetrics.roadnet.tlts import TLTSMetrics as TLTSMetrics
from drivemetrics.roadnet.tlts import TLTSResult as TLTSResult
from drivemetrics.roadnet.tlts import tlts as tlts

__all__ = [
    "PERTURBATIONS",
    "APLSMetrics",
    "APLSResult",
    "APLSScore",
    "CCQCompleteness",
    "CCQCorrectness",
    "CCQMetrics",
    "CCQQuality",
    "CCQResult",
    "GraphArrays",
    "JUNCTResult",
    "JunctionFCorrect",
    "JunctionFError",
    "JunctionMetrics",
    "OptGF1Score",
    "OptGMetrics",
    "OptGPrecision",
    "OptGRecall",
    "OptGResult",
    "OptJF1Score",
    "OptJMetrics",
    "OptJPrecision",
    "OptJRecall",
    "OptJResult",
    "OptPF1Score",
    "OptPMetrics",
    "OptPPrecision",
    "OptPRecall",
    "OptPResult",
    "Projection",
    "SUBGResult",
    "SegmentIndex",
    "SubgraphF1Score",
    "SubgraphMetrics",
    "TLTSAccuracy",
    "TLTSMetrics",
    "TLTSResult",
    "UnsafePickleError",
    "apls",
    "ccq",
    "ccq_graph",
    "control_nodes",
    "crop",
    "crop_protocol",
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
    "translate",
    "validate_graph",
    "write_roadtracer_graph",
]
