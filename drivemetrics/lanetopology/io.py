"""Reading OpenLane-V2 inputs: the devkit's ground-truth collection pickle, its submission pickle, the fixture JSON.

Pickles go through the restricted unpickler (:func:`~drivemetrics._internal.safe_pickle.safe_pickle_load`:
numpy arrays and scalars, dicts, lists, tuples, str and numbers; nothing that runs code).

* Ground-truth collection: ``{(split, segment_id, timestamp): {"annotation": {...}, ...}}``.
* Submission: ``{"method": ..., "results": {(split, segment_id, timestamp): {"predictions": {...}}}}``.
* Fixture JSON: ``{"track", "frames": [{"token": [split, segment_id, timestamp], "gt": {...}, "pred": {...}}]}``.

Every reader returns ``{token: frame dict}`` (tokens as tuples of str, in file order) with the devkit's per-frame
keys (see :mod:`drivemetrics.lanetopology.frames`), after the boundary checks of
:func:`~drivemetrics.lanetopology.frames.check_frame_input` on every frame (sizes within the map limits, points
finite and within ``max_map_coordinate``, confidences numbers in [0, 1]), each error naming the file and the frame.
A token may appear once: a frame given twice in a JSON file, or two pickle keys naming the same token (``("val",
1, 2)`` and ``("val", "1", "2")``), is refused naming both places. At most ``max_map_frames`` frames per file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivemetrics._internal.files import read_text
from drivemetrics._internal.limits import check_count, load_json
from drivemetrics._internal.safe_pickle import safe_pickle_load
from drivemetrics.lanetopology.frames import Track, check_frame_input

__all__ = ["detect_track", "read_ground_truth", "read_predictions", "token_name"]

Token = tuple[str, ...]


def token_name(token: Any) -> str:
    """A token as text for messages: ``("val", "10000", "315")`` -> ``val/10000/315``.

    Examples:
        >>> from drivemetrics.lanetopology.io import token_name
        >>> token_name(("val", "10000", "315"))
        'val/10000/315'
    """
    return "/".join(map(str, token)) if isinstance(token, (tuple, list)) else str(token)


def _token(value: Any) -> Token:
    return tuple(str(x) for x in value) if isinstance(value, (tuple, list)) else (str(value),)


def _read_json(path: Path) -> dict[str, Any]:
    # bounded nesting and integers; NaN / Infinity are read so that the frame checks name the frame and field
    data = load_json(read_text(path, what="OpenLane-V2 JSON file"), path, allow_non_finite=True)
    if not isinstance(data, dict) or not isinstance(data.get("frames"), list):
        raise ValueError(f"{path}: expected an object with a 'frames' list (the fixture schema)")
    return data


def _add_frame(
    out: dict[Token, Mapping[str, Any]],
    places: dict[Token, str],
    token: Token,
    frame: Any,
    place: str,
    path: Path,
    is_pred: bool,
) -> None:
    """``out[token] = frame`` after the boundary checks; a token seen before is refused naming both places."""
    if token in out:
        raise ValueError(f"{path}: frame {token_name(token)} appears twice ({places[token]} and {place})")
    check_frame_input(frame, track=None, is_pred=is_pred, where=f"{path}: frame {token_name(token)}")
    out[token] = frame
    places[token] = place


def _json_frames(path: Path, side: str) -> dict[Token, Mapping[str, Any]]:
    out: dict[Token, Mapping[str, Any]] = {}
    places: dict[Token, str] = {}
    frames = _read_json(path)["frames"]
    check_count(len(frames), "max_map_frames", path, "frames in one file")
    for k, frame in enumerate(frames):
        if not isinstance(frame, dict) or "token" not in frame or side not in frame:
            raise ValueError(f"{path}: frames[{k}] needs 'token' and '{side}'")
        _add_frame(out, places, _token(frame["token"]), frame[side], f"frames[{k}]", path, side == "pred")
    return out


def _is_json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


def read_ground_truth(path: str | Path) -> dict[Token, Mapping[str, Any]]:
    """Ground-truth frames from a devkit collection pickle or a fixture JSON (its ``gt`` side)."""
    path = Path(path)
    if _is_json(path):
        return _json_frames(path, "gt")
    data = safe_pickle_load(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected the devkit's dict {{token: {{'annotation': ...}}}}")
    check_count(len(data), "max_map_frames", path, "frames in one file")
    out: dict[Token, Mapping[str, Any]] = {}
    places: dict[Token, str] = {}
    for k, (token, entry) in enumerate(data.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("annotation"), dict):
            raise ValueError(f"{path}: frame {token_name(token)}: missing 'annotation' dict")
        _add_frame(out, places, _token(token), entry["annotation"], f"key {k}", path, False)
    return out


def read_predictions(path: str | Path) -> dict[Token, Mapping[str, Any]]:
    """Predicted frames from a devkit submission pickle or a fixture JSON (its ``pred`` side)."""
    path = Path(path)
    if _is_json(path):
        return _json_frames(path, "pred")
    data = safe_pickle_load(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ValueError(f"{path}: expected the devkit's submission dict {{'method': ..., 'results': {{...}}}}")
    check_count(len(data["results"]), "max_map_frames", path, "frames in one file")
    out: dict[Token, Mapping[str, Any]] = {}
    places: dict[Token, str] = {}
    for k, (token, entry) in enumerate(data["results"].items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("predictions"), dict):
            raise ValueError(f"{path}: frame {token_name(token)}: missing 'predictions' dict")
        _add_frame(out, places, _token(token), entry["predictions"], f"results key {k}", path, True)
    return out


def detect_track(frames: Mapping[Token, Mapping[str, Any]], path: str | Path) -> Track:
    """``"lanesegment"`` when the first frame has ``lane_segment``, ``"centerline"`` when ``lane_centerline``."""
    for frame in frames.values():
        if "lane_segment" in frame:
            return "lanesegment"
        if "lane_centerline" in frame:
            return "centerline"
        break
    raise ValueError(f"{path}: cannot tell the track (no 'lane_centerline' or 'lane_segment'); pass --track")
