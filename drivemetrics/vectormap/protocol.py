"""Evaluation protocols of vectorised HD-map AP: what each preset resamples, matches and integrates, and why.

``"nuscenes-maptr"`` (MapTR's nuScenes evaluator, commit a6872d8, settings of its nuScenes configs),
``"av2-cvpr23"`` (the CVPR 2023 Argoverse 2 online-map challenge evaluator, commit 775b203),
``"streammapnet-60x30"`` / ``"streammapnet-100x50"`` (StreamMapNet's ``vector_eval.py``, commit 4c7aaf4: 200 points
per line, no buffer prefilter, range-dependent thresholds, see :data:`STREAM_RANGES`), ``"maptracker-60x30"`` /
``"maptracker-100x50"`` (the per-frame matching of MapTracker's ``calculate_cmap.py``, commit ee8321f; its track
rules live in :mod:`drivemetrics.vectormap.consistency`) and ``"default"`` (the same Chamfer AP with the library's
fixes). Class ids in label tensors mean the same class under every preset:
:data:`MAP_CLASSES` order (0 ``divider``, 1 ``ped_crossing``, 2 ``boundary``), whatever order a benchmark's files use
(the readers map the files' own ids and names to these); a preset scores those classes or a subset of them, in that
order, so ``VectorMapAveragePrecision("divider")`` is the same class under every protocol and refuses one without it.

Fixes of ``"default"`` over the references (each a field below):

- fall-back matching: a prediction whose nearest GT is already taken may take the next nearest free GT within the
  threshold (the references count it as a false positive although a free GT is within reach);
- no 2 m buffer prefilter (a geometric rejection unrelated to the Chamfer distance, which flips pairs of lines
  meeting end to end);
- explicit dimensionality: 2-D or 3-D polylines are used as given (predictions and GT must agree) instead of being
  cut or silently reshaped;
- a class without any GT reports AP NaN (not 0) and the mAP averages the classes that have GT;
- ties between scores (in every protocol) are ordered by content (fewer true-positive thresholds first; the
  references use numpy's unstable sort), so that the pooled AP does not depend on the order of frames;
- float64 throughout (MapTR keeps precision / recall in float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["MAP_CLASSES", "PROTOCOLS", "STREAM_RANGES", "MapProtocol", "ProtocolName", "get_protocol"]

#: The map classes, in label-id order for every preset protocol (a custom :class:`MapProtocol` may name others).
MAP_CLASSES: tuple[str, ...] = ("divider", "ped_crossing", "boundary")


@dataclass(frozen=True)
class MapProtocol:
    """One evaluation protocol of vectorised-map Chamfer AP.

    Attributes:
        name: preset name.
        class_names: class names in label-id order.
        thresholds: Chamfer thresholds (metres).
        resample: ``"count"`` (``num_samples`` points at even arc length) or ``"spacing"`` (every ``spacing`` m).
        num_samples: points per line for ``"count"``.
        spacing: metres between samples for ``"spacing"``.
        buffer_prefilter: buffer distance (metres) of MapTR's flat-cap, mitred buffer prefilter, or ``None``.
        fallback: fall-back matching to the next nearest free GT (see :func:`drivemetrics.polyline.greedy_match`).
        float32_curve: precision / recall in float32 and each AP rounded to float32 (MapTR).
        empty_class_ap: AP of a class without GT: ``"nan"`` or ``"zero"`` (the references' value).
        dims: ``"2d"``: the first two coordinates are used (GT cut to (x, y); 3-D predictions are an error, as the
            references cannot use them); ``"as-given"``: 2-D or 3-D, predictions and GT must agree.
        min_pred_points: predictions with fewer points are dropped (MapTR drops lines under 2 points).

    Examples:
        >>> from drivemetrics.vectormap import PROTOCOLS
        >>> from drivemetrics.vectormap import MapProtocol
        >>> maptr = PROTOCOLS["nuscenes-maptr"]
        >>> maptr.class_names, maptr.thresholds, maptr.num_samples, maptr.buffer_prefilter
        (('divider', 'ped_crossing', 'boundary'), (0.5, 1.0, 1.5), 100, 2.0)
        >>> MapProtocol("strict", ("divider",), thresholds=(0.5,), fallback=False).fallback
        False
    """

    name: str
    class_names: tuple[str, ...]
    thresholds: tuple[float, ...] = (0.5, 1.0, 1.5)
    resample: Literal["count", "spacing"] = "count"
    num_samples: int = 100
    spacing: float = 0.3
    buffer_prefilter: float | None = None
    fallback: bool = True
    float32_curve: bool = False
    empty_class_ap: Literal["nan", "zero"] = "nan"
    dims: Literal["2d", "as-given"] = "as-given"
    min_pred_points: int = 2


#: A protocol's name (type checkers reject any other string).
ProtocolName = Literal[
    "default",
    "nuscenes-maptr",
    "av2-cvpr23",
    "streammapnet-60x30",
    "streammapnet-100x50",
    "maptracker-60x30",
    "maptracker-100x50",
]

#: StreamMapNet's perception ranges (x-size x y-size, metres) and the Chamfer thresholds its evaluator sets for each
#: (``vector_eval.py``: ``roi_size == (60, 30)`` -> 0.5 / 1.0 / 1.5 m, ``(100, 50)`` -> 1.0 / 1.5 / 2.0 m); MapTracker's
#: ``calculate_cmap.py`` uses the same pairs.
STREAM_RANGES: dict[str, tuple[float, float, float]] = {"60x30": (0.5, 1.0, 1.5), "100x50": (1.0, 1.5, 2.0)}

PROTOCOLS: dict[str, MapProtocol] = {
    "default": MapProtocol(name="default", class_names=MAP_CLASSES),
    "nuscenes-maptr": MapProtocol(
        name="nuscenes-maptr",
        class_names=MAP_CLASSES,
        resample="count",
        num_samples=100,
        buffer_prefilter=2.0,
        fallback=False,
        float32_curve=True,
        empty_class_ap="zero",
        dims="2d",
    ),
    "av2-cvpr23": MapProtocol(
        name="av2-cvpr23",
        class_names=MAP_CLASSES,  # the challenge's files number them ped_crossing, divider, boundary (io.AV2_CLASSES)
        resample="spacing",
        spacing=0.3,
        fallback=False,
        empty_class_ap="zero",
        dims="2d",
    ),
    **{
        f"{family}-{roi}": MapProtocol(
            name=f"{family}-{roi}",
            class_names=MAP_CLASSES,  # the files number them ped_crossing, divider, boundary (io.AV2_CLASSES)
            thresholds=thresholds,
            resample="count",
            num_samples=200,
            fallback=False,
            empty_class_ap="zero",
            dims="2d",
        )
        for family in ("streammapnet", "maptracker")
        for roi, thresholds in STREAM_RANGES.items()
    },
}


def get_protocol(protocol: ProtocolName | MapProtocol) -> MapProtocol:
    """The :class:`MapProtocol` named ``protocol`` (or ``protocol`` itself); ``ValueError`` naming the choices.

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> get_protocol("av2-cvpr23").class_names  # label ids: the same classes under every preset
        ('divider', 'ped_crossing', 'boundary')
    """
    if isinstance(protocol, MapProtocol):
        return protocol
    if protocol not in PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {tuple(PROTOCOLS)}, got {protocol!r}")
    return PROTOCOLS[protocol]
