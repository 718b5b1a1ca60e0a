"""Small OpenLane-V2 frames for the examples: one call gives the families' ``update`` arguments.

The family classes' examples build their inputs in full, so a reader sees the format; the scalar classes' examples
call the helper here (``OpenLaneV2Score()(**drivemetrics.lanetopology.openlanev2_example_inputs())``) and show
only their value.
"""

from __future__ import annotations

from typing import Any

from drivemetrics.lanetopology.frames import Track

__all__ = ["openlanev2_example_inputs"]


def _line(y: float) -> list[list[float]]:
    """A straight 10 m line along x at lateral offset ``y``, three ``(x, y, z)`` points in metres."""
    return [[0.0, y, 0.0], [5.0, y, 0.0], [10.0, y, 0.0]]


def _lane(y: float, track: Track, confidence: float | None) -> dict[str, Any]:
    """A lane at lateral offset ``y`` (metres) in the track's devkit format."""
    if track == "centerline":
        lane = {"points": _line(y)}
    else:
        lane = {"centerline": _line(y), "left_laneline": _line(y + 1.75), "right_laneline": _line(y - 1.75)}
    return lane if confidence is None else {**lane, "confidence": confidence}


def _frame(track: Track, shifts: list[float] | None) -> dict[str, Any]:
    """Two lanes 3.5 m apart (the first leads into the second, the first obeys the traffic element), one element."""
    pred = shifts is not None
    lanes = [_lane(3.5 * k + (shifts[k] if pred else 0.0), track, 0.9 - 0.2 * k if pred else None) for k in range(2)]
    element = {"points": [[100.0, 100.0], [140.0, 150.0]], "attribute": 0, "category": 1}
    elements = [{**element, "confidence": 0.8} if pred else element]
    lane_lane = [[0.0, 0.7 if pred else 1.0], [0.0, 0.0]]
    lane_element = [[0.6 if pred else 1.0], [0.1 if pred else 0.0]]
    if track == "centerline":
        return {
            "lane_centerline": lanes,
            "traffic_element": elements,
            "topology_lclc": lane_lane,
            "topology_lcte": lane_element,
        }
    area = {"points": [[0.0, -6.0, 0.0], [10.0, -6.0, 0.0]], "category": 2}
    return {
        "lane_segment": lanes,
        "area": [{**area, "confidence": 0.7} if pred else area],
        "traffic_element": elements,
        "topology_lsls": lane_lane,
        "topology_lste": lane_element,
    }


def openlanev2_example_inputs(track: Track = "centerline") -> dict[str, list[dict[str, Any]]]:
    """One frame of the ``track``: two lanes predicted 0.5 m and 1.5 m off, one traffic element, their relations.

    Returns ``{"preds": [frame], "target": [frame]}`` of devkit dicts (metres, image pixels for the element's box);
    ``track="lanesegment"`` gives lane segments with their lane lines and one area (predicted exactly).

    Examples:
        >>> from drivemetrics.lanetopology import openlanev2_example_inputs
        >>> sorted(openlanev2_example_inputs()["preds"][0])
        ['lane_centerline', 'topology_lclc', 'topology_lcte', 'traffic_element']
    """
    return {"preds": [_frame(track, [0.5, 1.5])], "target": [_frame(track, None)]}
