"""Type stub of the lazy exports of :mod:`drivemetrics.vectormap` (kept equal to ``_EXPORTS``)."""

from drivemetrics.vectormap.chamfer_loss import MapChamferLoss as MapChamferLoss
from drivemetrics.vectormap.evaluate import MapEvaluation as MapEvaluation
from drivemetrics.vectormap.evaluate import evaluate_map_files as evaluate_map_files
from drivemetrics.vectormap.evaluate import evaluate_map_samples as evaluate_map_samples
from drivemetrics.vectormap.io import MapSample as MapSample
from drivemetrics.vectormap.io import pack_samples as pack_samples
from drivemetrics.vectormap.io import read_map_gt as read_map_gt
from drivemetrics.vectormap.io import read_map_preds as read_map_preds
from drivemetrics.vectormap.map_ap import VectorMapAPMetrics as VectorMapAPMetrics
from drivemetrics.vectormap.map_ap import VectorMapAveragePrecision as VectorMapAveragePrecision
from drivemetrics.vectormap.map_ap import VectorMapMeanAveragePrecision as VectorMapMeanAveragePrecision
from drivemetrics.vectormap.protocol import PROTOCOLS as PROTOCOLS
from drivemetrics.vectormap.protocol import MapProtocol as MapProtocol

__all__: list[str]
