"""Run a ``drivemetrics`` command (or a Python snippet) in a child process and measure its cost.

Used by ``tests/test_bounded_cost.py`` (issue 24's table, one row per test) and ``tests/test_fuzz_cost.py``; run as a
script (``python tests/cost_harness.py [ROOT]``) it prints every row's time and peak RSS for the package found at
``ROOT`` (default: this checkout), which is how the before / after numbers of the README were measured.

The child gets an address-space cap (``RLIMIT_AS``) and a wall-clock timeout, so a regression fails the test
instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Address-space cap of every child (torch alone reserves ~0.7 GB of address space).
MEMORY_CAP = 3 * 1024**3


@dataclass
class Run:
    """Exit status, wall time (s), peak RSS (MB), output and CPU time (user + system, s) of one child process."""

    returncode: int
    seconds: float
    peak_mb: float
    stdout: str
    stderr: str
    cpu_seconds: float = 0.0


def run_child(
    argv: list[str], cwd: Path, *, timeout: float = 120.0, root: Path = REPO_ROOT, env: dict | None = None
) -> Run:
    """``argv`` run as a child (``python -m drivemetrics`` when it starts with a command name)."""
    if argv and argv[0] != "-c":
        argv = ["-m", "drivemetrics", *argv]

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    child_env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", **(env or {})}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, *argv], cwd=cwd, env=child_env, stdout=out, stderr=err, preexec_fn=cap, text=True
        )
        while True:  # os.wait4 gives this child's own peak RSS (RUSAGE_CHILDREN would mix every child)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Run(proc.returncode, seconds, usage.ru_maxrss / 1024, out.read(), err.read(), cpu)


# ---------------------------------------------------------------------------------------------------------------
# a warm child: imports the package once, then forks one grandchild per command (no import cost per row)

#: Run by the warm child: import what the commands import, then for each JSON request on stdin fork a grandchild
#: that runs ``drivemetrics.cli.main(argv)`` in ``cwd`` under the memory cap, and answer its exit status, wall time,
#: peak RSS and CPU time (from ``wait4``: the grandchild's own, not the imports before the fork).
_SERVER = r"""
import json, os, resource, sys, tempfile, time
import networkx, numpy, PIL.Image, scipy.optimize, torch, torchmetrics  # noqa: F401
import drivemetrics.cli
for name in ("lane", "road", "roadnet", "lanegraph", "lanetopology", "detection", "attack"):
    try:
        __import__(f"drivemetrics.{name}.cli")
    except ImportError:
        pass
cap = int(sys.argv[1])
reply = os.fdopen(os.dup(1), "w")
for request in sys.stdin:
    job = json.loads(request)
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(job["cwd"])
            os.environ.update(job["env"])
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            code = drivemetrics.cli.main(job["argv"])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code or 0)
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() - start > job["timeout"]:
            os.kill(pid, 9)
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    seconds = time.perf_counter() - start
    out.seek(0)
    err.seek(0)
    answer = {
        "returncode": os.waitstatus_to_exitcode(status), "seconds": seconds, "peak_mb": usage.ru_maxrss / 1024,
        "stdout": out.read(), "stderr": err.read(), "cpu_seconds": usage.ru_utime + usage.ru_stime,
    }
    out.close()
    err.close()
    reply.write(json.dumps(answer) + "\n")
    reply.flush()
"""


class WarmCommands:
    """``drivemetrics`` commands run in grandchildren forked from one child that imported the package once.

    Each command still runs in its own process under :data:`MEMORY_CAP`, and its :class:`Run` holds that process's
    own wall time, CPU time and peak RSS; only the start-up (Python, torch and the package imports, about 3 s of
    CPU) is paid once instead of once per command. Use as a context manager.
    """

    def __init__(self, root: Path = REPO_ROOT) -> None:
        env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(MEMORY_CAP)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def run(self, argv: list[str], cwd: Path, *, timeout: float = 120.0, env: dict | None = None) -> Run:
        """``drivemetrics ARGV`` run in ``cwd`` (as :func:`run_child` does, without the start-up)."""
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        request = {"argv": list(argv), "cwd": str(cwd), "timeout": timeout, "env": dict(env or {})}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the warm child ended (exit {self._proc.wait()})")
        return Run(**json.loads(answer))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)

    def __enter__(self) -> WarmCommands:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------------------------
# the rows of issue 24's table: each builds its files under ``tmp`` and returns (hostile argv, valid argv)

H_SAMPLES = list(range(160, 720, 10))  # 56 TuSimple rows


def _tusimple(tmp: Path, pred_record: str | None = None) -> tuple[list[str], list[str]]:
    lane = [600 + 2 * k for k in range(len(H_SAMPLES))]
    gt = {"raw_file": "clips/a/20.jpg", "lanes": [lane, [-2] * len(H_SAMPLES)], "h_samples": H_SAMPLES}
    (tmp / "gt.json").write_text(json.dumps(gt) + "\n")
    (tmp / "ok.json").write_text(json.dumps({"raw_file": "clips/a/20.jpg", "lanes": [lane], "run_time": 10}) + "\n")
    (tmp / "bad.json").write_text((pred_record or "") + "\n")
    args = ["tusimple-eval", "--gt", "gt.json", "--pred"]
    return [*args, "bad.json"], [*args, "ok.json"]


def _culane(tmp: Path, pred_text: str, list_text: str | None = None) -> tuple[list[str], list[str]]:
    for folder in ("gt", "ok", "bad"):
        (tmp / folder).mkdir()
    lane = "800 580 810 450 820 300\n"
    (tmp / "gt" / "a.lines.txt").write_text(lane)
    (tmp / "ok" / "a.lines.txt").write_text(lane)
    (tmp / "bad" / "a.lines.txt").write_text(pred_text)
    if list_text is not None:
        (tmp / "list.txt").write_bytes(list_text.encode())
        (tmp / "ok_list.txt").write_text("a.jpg\n")
    args = ["culane-eval", "--gt", "gt", "--pred", "ok"]
    if list_text is None:
        args = args[:-1]
        return [*args, "bad", "--json", "out.json"], [*args, "ok", "--json", "ok_out.json"]
    return [*args, "--list", "list.txt", "--json", "out.json"], [
        *args,
        "--list",
        "ok_list.txt",
        "--json",
        "ok_out.json",
    ]


ROAD_GRAPH = "0 0\n400 0\n400 400\n0 400\n\n0 1\n1 2\n2 3\n"


def _graph(
    tmp: Path, pred_text: str, name: str = "pred.graph", extra: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    (tmp / "gt.graph").write_text(ROAD_GRAPH)
    (tmp / "ok.graph").write_text(ROAD_GRAPH)
    (tmp / name).write_text(pred_text)
    args = ["graph-eval", "--no-progress", "--workers", "1", "--gt", "gt.graph", "--pred"]
    return [*args, name, *extra], [*args, "ok.graph"]


def _lane_graph_pickle(path: Path, far: bool) -> None:
    import networkx as nx
    import numpy as np

    graph = nx.DiGraph()
    for k in range(11):
        graph.add_node(k, pos=np.array([20.0 + 20 * k, 128.0]))
    graph.add_edges_from((k, k + 1) for k in range(10))
    if far:
        graph.nodes[10]["pos"] = np.array([1e7, 1e7])
    path.write_bytes(pickle.dumps({"austin": {"eval": {"austin_1_0_0": graph}}}, protocol=4))


def _png_bomb(path: Path, side: int = 12_000) -> None:
    """A ``side x side`` grey PNG of zeros (about 140 KB for 12,000 px), compressed row by row."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    packer = zlib.compressobj(9)
    row = bytes(side + 1)
    data = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    header = side.to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))


def _small_png(path: Path, shape: tuple[int, ...], value: int = 200) -> None:
    import numpy as np
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    array = np.full(shape, value, np.uint8)
    if len(shape) == 3:
        array[..., 2] = 255  # KITTI GT: blue channel = road
    Image.fromarray(array).save(path)


ROAD_CALIB = (
    "P0: " + " ".join(["1.0"] * 12) + "\nP1: " + " ".join(["1.0"] * 12) + "\nP2: 721.5 0 609.5 44.8 0 721.5 172.8 "
    "0.2 0 0 1 0.003\nP3: "
    + " ".join(["1.0"] * 12)
    + "\nR0_rect: 1 0 0 0 1 0 0 0 1\nTr_velo_to_cam: "
    + " ".join(["0.5"] * 12)
    + "\nTr_imu_to_velo: "
    + " ".join(["0.5"] * 12)
    + "\nTr_cam_to_road: 1 0 0 0 0 1 0 -1.6 0 0 1 0\n"
)


def _road_eval(tmp: Path) -> tuple[list[str], list[str]]:
    _small_png(tmp / "data" / "gt_image_2" / "um_road_000000.png", (375, 1242, 3), 0)
    _small_png(tmp / "ok" / "um_road_000000.png", (375, 1242))
    (tmp / "bad").mkdir()
    _png_bomb(tmp / "bad" / "um_road_000000.png")
    args = ["road-eval", "--no-progress", "--workers", "1", "--categories", "um_road", "--data", "data", "--results"]
    return [*args, "bad"], [*args, "ok"]


def _road_bev(tmp: Path) -> tuple[list[str], list[str]]:
    (tmp / "calib").mkdir()
    (tmp / "calib" / "um_000000.txt").write_text(ROAD_CALIB)
    _small_png(tmp / "ok" / "um_road_000000.png", (375, 1242))
    (tmp / "bad").mkdir()
    _png_bomb(tmp / "bad" / "um_road_000000.png")
    args = ["road-bev", "--no-progress", "--threads", "1", "--calib", "calib", "--output", "out", "--input"]
    return [*args, "bad"], [*args, "ok"]


def _lanegraph(tmp: Path) -> tuple[list[str], list[str]]:
    _lane_graph_pickle(tmp / "gt.pickle", far=False)
    _lane_graph_pickle(tmp / "ok.pickle", far=False)
    _lane_graph_pickle(tmp / "bad.pickle", far=True)
    args = ["lanegraph-eval", "--no-progress", "--workers", "1", "--task", "successor", "--gt", "gt.pickle", "--pred"]
    return [*args, "bad.pickle"], [*args, "ok.pickle"]


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


#: name -> (builder, what a correct outcome is: "error" = exit 2 with one line; "ok" = exit 0)
SCENARIOS = {
    "culane_far_point": (lambda t: _culane(t, "0 0 1e7 1e7\n"), "ok"),
    "culane_200k_points": (
        lambda t: _culane(t, " ".join(f"{800 + k * 1e-3} {580 - k * 1e-3}" for k in range(200_000)) + "\n"),
        "error",
    ),
    "culane_300k_lanes": (lambda t: _culane(t, "800 580 810 450\n" * 300_000), "error"),
    "culane_nul_in_list": (lambda t: _culane(t, "", "a.jpg\x00\n"), "error"),
    "graph_far_nodes": (lambda t: _graph(t, "0 0\n1e7 1e7\n\n0 1\n"), "error"),
    "graph_nodes_1e300": (lambda t: _graph(t, "0 0\n1e300 1e300\n\n0 1\n"), "error"),
    "graph_bad_edge_index": (lambda t: _graph(t, "0 0\n10 10\n\n0 7\n"), "error"),
    "graph_deep_geojson": (lambda t: _graph(t, _deep(100_000), "pred.geojson"), "error"),
    "graph_set_not_a_number": (lambda t: _graph(t, ROAD_GRAPH, extra=("--set", "opt_j.d_max=abc")), "error"),
    "lanegraph_far_node": (_lanegraph, "error"),
    "tusimple_200k_points": (
        lambda t: _tusimple(
            t, json.dumps({"raw_file": "clips/a/20.jpg", "lanes": [list(range(200_000))], "run_time": 1})
        ),
        "error",
    ),
    "tusimple_2000_lanes": (
        lambda t: _tusimple(t, json.dumps({"raw_file": "clips/a/20.jpg", "lanes": [[-2] * 56] * 2000, "run_time": 1})),
        "error",
    ),
    "tusimple_deep_json": (lambda t: _tusimple(t, _deep(100_000)), "error"),
    "tusimple_huge_int": (
        lambda t: _tusimple(t, '{"raw_file": "clips/a/20.jpg", "lanes": [], "run_time": 1' + "0" * 400 + "}"),
        "error",
    ),
    "road_png_bomb": (_road_eval, "error"),
    "road_bev_size_mismatch": (_road_bev, "error"),
    "json_into_proc": (
        lambda t: _replace_json(_culane(t, "800 580 810 450 820 300\n"), "/proc/nonexistent/out.json"),
        "error",
    ),
    # a folder that holds no input (a folder holding one is refused by the output rule first: next row)
    "json_into_a_folder": (
        lambda t: (t / "empty").mkdir() or _replace_json(_culane(t, "800 580 810 450 820 300\n"), "empty"),
        "error",
    ),
    "json_over_the_inputs": (lambda t: _replace_json(_culane(t, "800 580 810 450 820 300\n"), "."), "error"),
}


# ---------------------------------------------------------------------------------------------------------------
# openlanev2-eval and map-eval (issue 36): small valid inputs, and the hostile rows built from them


def _olv2_lane(x: float, k: int, points: int = 11) -> dict:
    return {"id": k, "points": [[x, 2.0 * j, 0.0] for j in range(points)]}


def _olv2_frame(lanes: list[dict], confidence: object = 0.9) -> dict:
    return {
        "lane_centerline": [{**lane, "confidence": confidence} for lane in lanes],
        "traffic_element": [],
        "topology_lclc": [[0.5] * len(lanes) for _ in lanes],
        "topology_lcte": [[] for _ in lanes],
    }


def _olv2_gt() -> dict:
    lanes = [_olv2_lane(0.0, 0), _olv2_lane(3.5, 1)]
    return {
        "lane_centerline": lanes,
        "traffic_element": [],
        "topology_lclc": [[0, 1], [0, 0]],
        "topology_lcte": [[], []],
    }


OLV2_TOKEN = ["val", "10000", "315970000000000000"]


def _olv2_files(tmp: Path, pred_frames: list[dict] | None = None, bad_text: bytes | None = None) -> tuple:
    """GT JSON of one frame; ok.json predicts it well; bad.json holds ``pred_frames`` (or ``bad_text``)."""
    gt = {"track": "centerline", "frames": [{"token": OLV2_TOKEN, "gt": _olv2_gt()}]}
    ok = {"frames": [{"token": OLV2_TOKEN, "pred": _olv2_frame([_olv2_lane(0.1, 0), _olv2_lane(3.4, 1)])}]}
    (tmp / "gt.json").write_text(json.dumps(gt))
    (tmp / "ok.json").write_text(json.dumps(ok))
    if bad_text is not None:
        (tmp / "bad.pkl").write_bytes(bad_text)
        name = "bad.pkl"
    else:
        (tmp / "bad.json").write_text(json.dumps({"frames": pred_frames}))
        name = "bad.json"
    args = ["openlanev2-eval", "--workers", "1", "--gt", "gt.json", "--pred"]
    return [*args, name, "--json", "out.json"], [*args, "ok.json", "--json", "ok_out.json"]


def _olv2_pred(frame: dict, token: list[str] = OLV2_TOKEN) -> dict:
    return {"token": token, "pred": frame}


def _olv2_submission_pickle(points: object) -> bytes:
    """A devkit submission pickle whose one lane's points are ``points``."""
    import numpy as np

    frame = {
        "lane_centerline": [{"id": 0, "points": points, "confidence": np.float32(0.5)}],
        "traffic_element": [],
        "topology_lclc": np.zeros((1, 1)),
        "topology_lcte": np.zeros((1, 0)),
    }
    return pickle.dumps({"method": "x", "results": {tuple(OLV2_TOKEN): {"predictions": frame}}}, protocol=4)


class _FlaglessObjectDtype:
    def __reduce__(self):
        import numpy as np

        return np.dtype, ("O8", False, True), (3, "|", None, None, None, -1, -1, 0)


class _ScalarOfFlaglessDtype:
    def __reduce__(self):
        import numpy as np

        return np._core.multiarray.scalar, (_FlaglessObjectDtype(), b"A" * 8)


def _olv2_dtype_attack() -> bytes:
    """Issue 36's memory corruption: a scalar of an object dtype whose state cleared its flags (segfaulted)."""
    return pickle.dumps({"method": "x", "results": {tuple(OLV2_TOKEN): _ScalarOfFlaglessDtype()}}, protocol=2)


MAP_GT = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0.0, 0.0], [0.0, 10.0]], "type": 0}]}]}


def _map_line(x: float, confidence: object = 0.9, points: int = 20, kind: int = 0) -> dict:
    return {"pts": [[x, 10.0 * j / (points - 1)] for j in range(points)], "type": kind, "confidence_level": confidence}


def _map_files(tmp: Path, bad: object, gt: object = None, protocol: str = "default", ok: object = None) -> tuple:
    """MapTR-format GT of one sample (or ``gt``); ok.json predicts it; bad.json holds ``bad``."""
    (tmp / "gt.json").write_text(json.dumps(gt or MAP_GT))
    (tmp / "ok.json").write_text(json.dumps(ok or {"results": [{"sample_token": "a", "vectors": [_map_line(0.1)]}]}))
    (tmp / "bad.json").write_text(json.dumps(bad))
    args = ["map-eval", "--protocol", protocol, "--gt", "gt.json", "--pred"]
    return [*args, "bad.json", "--json", "out.json"], [*args, "ok.json", "--json", "ok_out.json"]


AV2_GT = {"seg": [{"timestamp": "1", "annotation": {"divider": [[[0, 0, 0, 1], [0, 10, 0, 1]]]}}]}


def _av2_files(tmp: Path, bad_results: dict, gt: object = None) -> tuple:
    ok = {"results": {"1": {"vectors": [[[0.1, 0.0], [0.1, 10.0]]], "scores": [0.9], "labels": [1]}}}
    return _map_files(tmp, {"results": bad_results}, gt or AV2_GT, "av2-cvpr23", ok)


def _map_token_twice(tmp: Path) -> tuple:
    gt = {"GTs": [MAP_GT["GTs"][0], {"sample_token": "b", "vectors": []}, MAP_GT["GTs"][0]]}
    ok = {"results": [{"sample_token": "a", "vectors": [_map_line(0.1)]}]}
    (tmp / "bad_gt.json").write_text(json.dumps(gt))
    (tmp / "gt.json").write_text(json.dumps(MAP_GT))
    (tmp / "ok.json").write_text(json.dumps(ok))
    args = ["map-eval", "--pred", "ok.json", "--gt"]
    return [*args, "bad_gt.json"], [*args, "gt.json"]


def _av2_timestamp_twice(tmp: Path) -> tuple:
    frame = AV2_GT["seg"][0]
    (tmp / "bad_gt.json").write_text(json.dumps({"seg": [frame], "other": [frame]}))
    (tmp / "gt.json").write_text(json.dumps(AV2_GT))
    ok = {"results": {"1": {"vectors": [[[0.1, 0.0], [0.1, 10.0]]], "scores": [0.9], "labels": [1]}}}
    (tmp / "ok.json").write_text(json.dumps(ok))
    args = ["map-eval", "--protocol", "av2-cvpr23", "--pred", "ok.json", "--gt"]
    return [*args, "bad_gt.json"], [*args, "gt.json"]


def _olv2_token_twice(tmp: Path) -> tuple:
    frame = _olv2_frame([_olv2_lane(0.1, 0)])
    return _olv2_files(tmp, [_olv2_pred(frame), _olv2_pred(frame)])


#: issue 36's rows: name -> (builder, outcome)
TRUST_SCENARIOS = {
    "olv2_3000_lanes": (
        lambda t: _olv2_files(t, [_olv2_pred({**_olv2_frame([_olv2_lane(0.0, k, 2) for k in range(3000)]),
                                              "topology_lclc": [], "topology_lcte": []})]),
        "error",
    ),
    "olv2_1e6_point_lane": (
        lambda t: _olv2_files(t, bad_text=_olv2_submission_pickle(__import__("numpy").zeros((10**6, 3), "f4"))),
        "error",
    ),
    "olv2_range_as_points": (lambda t: _olv2_files(t, bad_text=_olv2_submission_pickle(range(10**8))), "error"),
    "olv2_dtype_attack": (lambda t: _olv2_files(t, bad_text=_olv2_dtype_attack()), "error"),
    "olv2_20k_point_lanes": (
        lambda t: _olv2_files(t, [_olv2_pred(_olv2_frame([_olv2_lane(0.0, k, 20_000) for k in range(4)]))]),
        "error",
    ),
    "olv2_token_twice": (_olv2_token_twice, "error"),
    "olv2_confidence_text": (
        lambda t: _olv2_files(t, [_olv2_pred(_olv2_frame([_olv2_lane(0.1, 0)], confidence="0.5"))]),
        "error",
    ),
    "olv2_confidence_5": (lambda t: _olv2_files(t, [_olv2_pred(_olv2_frame([_olv2_lane(0.1, 0)], 5.0))]), "error"),
    "olv2_coordinate_1e308": (
        lambda t: _olv2_files(t, [_olv2_pred(_olv2_frame([{"id": 0, "points": [[0, 0, 0], [1e308, 0, 0]]}]))]),
        "error",
    ),
    "olv2_empty_predictions": (lambda t: _olv2_files(t, [_olv2_pred(_olv2_frame([]))]), "ok"),
    "map_100k_lines": (
        lambda t: _map_files(t, {"results": [{"sample_token": "a", "vectors": [_map_line(0.0, points=2)] * 100_000}]}),
        "error",
    ),
    "map_20k_point_lines": (
        lambda t: _map_files(t, {"results": [{"sample_token": "a", "vectors": [_map_line(0.0, points=20_000)] * 4}]}),
        "error",
    ),
    "map_av2_29km_lines": (
        lambda t: _av2_files(
            t, {"1": {"vectors": [[[0, 0], [29_000.0, 0]], [[0, 1], [0, 29_000.0]]], "scores": [0.5, 0.4],
                      "labels": [1, 1]}}
        ),
        "error",
    ),
    "map_coordinate_1e308": (
        lambda t: _map_files(t, {"results": [{"sample_token": "a", "vectors": [
            {"pts": [[0, 0], [1e308, 0]], "type": 0, "confidence_level": 0.5}]}]}),
        "error",
    ),
    "map_3d_line_in_maptr": (
        lambda t: _map_files(t, {"results": [{"sample_token": "a", "vectors": [
            {"pts": [[0, 0, 0], [0, 10, 1]], "type": 0, "confidence_level": 0.5}]}]}, protocol="nuscenes-maptr"),
        "error",
    ),
    "map_confidence_text": (
        lambda t: _map_files(t, {"results": [{"sample_token": "a", "vectors": [_map_line(0.1, "0.5")]}]}),
        "error",
    ),
    "map_confidence_5": (
        lambda t: _map_files(t, {"results": [{"sample_token": "a", "vectors": [_map_line(0.1, 5.0)]}]}),
        "error",
    ),
    "map_gt_token_twice": (_map_token_twice, "error"),
    "map_av2_timestamp_twice": (_av2_timestamp_twice, "error"),
    "map_empty_results_default": (lambda t: _map_files(t, {"results": []}), "ok"),
    "map_empty_results_maptr": (lambda t: _map_files(t, {"results": []}, protocol="nuscenes-maptr"), "ok"),
    "map_empty_results_av2": (lambda t: _av2_files(t, {}), "ok"),
    "map_every_token_mismatched": (
        lambda t: _map_files(t, {"results": [{"sample_token": "zz", "vectors": [_map_line(0.1)]}]}),
        "ok",
    ),
}  # fmt: skip
SCENARIOS.update(TRUST_SCENARIOS)


# ---------------------------------------------------------------------------------------------------------------
# issue 51: cost bounded by the input's size, never by its coordinates


def _av2_zigzag(tmp: Path, lines: int, metres: float) -> tuple:
    """``lines`` AV2 GT and prediction lines of ``metres`` each, back and forth within +-1,000 m (a few dozen bytes
    each): the Chamfer distances of every pair grow with the resampled lengths squared."""
    legs = max(1, round(metres / 2000))
    vectors = [[[-1000.0 if j % 2 == 0 else 1000.0, float(k)] for j in range(legs + 1)] for k in range(lines)]
    bad, ok = _av2_files(tmp, {"1": {"vectors": vectors, "scores": [0.5] * lines, "labels": [1] * lines}})
    gt = {"seg": [{"timestamp": "1", "annotation": {"divider": [[[*p, 0.0] for p in v] for v in vectors]}}]}
    (tmp / "bad_gt.json").write_text(json.dumps(gt))
    return [a if a != "gt.json" else "bad_gt.json" for a in bad], ok


def _lanegraph_shared(tmp: Path, samples: int) -> tuple:
    import networkx as nx
    import numpy as np

    graph = nx.DiGraph()
    graph.add_node(0, pos=np.array([20.0, 128.0]))
    graph.add_node(1, pos=np.array([200.0, 128.0]))
    graph.add_edge(0, 1)
    shared = {f"austin_{k}_0_0": graph for k in range(samples)}  # one graph, pickled once, evaluated per sample
    (tmp / "bad.pickle").write_bytes(pickle.dumps({"austin": {"eval": shared}}, protocol=4))
    _lane_graph_pickle(tmp / "gt.pickle", far=False)
    _lane_graph_pickle(tmp / "ok.pickle", far=False)
    args = ["lanegraph-eval", "--no-progress", "--workers", "1", "--task", "successor"]
    return [*args, "--gt", "bad.pickle", "--pred", "bad.pickle"], [*args, "--gt", "gt.pickle", "--pred", "ok.pickle"]


KITTI_ROW = "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59"


def _kitti_crowd(tmp: Path, objects: int) -> tuple:
    for folder, count in (("gt", objects), ("det", objects), ("ok_gt", 1), ("ok_det", 1)):
        (tmp / folder).mkdir()
        score = " 0.9" if "det" in folder else ""
        (tmp / folder / "000000.txt").write_text(f"{KITTI_ROW}{score}\n" * count)
    args = ["kitti-object-eval", "--no-progress", "--threads", "1"]
    return [*args, "--gt", "gt", "--det", "det"], [*args, "--gt", "ok_gt", "--det", "ok_det"]


ISSUE51_SCENARIOS = {
    "map_av2_five_4km_lines": (lambda t: _av2_zigzag(t, 5, 4000.0), "error"),
    "map_av2_2km_line": (lambda t: _av2_zigzag(t, 1, 2000.0), "error"),
    "graph_nodes_32000px_apart": (lambda t: _graph(t, "0 0\n32000 0\n\n0 1\n"), "ok"),
    "graph_nodes_32000px_diagonal": (lambda t: _graph(t, "0 0\n32000 32000\n\n0 1\n"), "error"),
    "graph_nodes_far_from_the_gt": (lambda t: _graph(t, "16000 16000\n16010 16010\n\n0 1\n"), "error"),
    "graph_window_40000px": (
        lambda t: _graph(t, ROAD_GRAPH, extra=("--window", "0", "0", "40000", "40000")), "error"
    ),
    "culane_line_width_1e6": (
        lambda t: _replace_json(_culane(t, "800 580 810 450 820 300\n"), "out.json", ("--line-width", "1e6")),
        "error",
    ),
    "lanegraph_20000_shared_samples": (lambda t: _lanegraph_shared(t, 20_000), "error"),
    "kitti_5000_objects_in_a_frame": (lambda t: _kitti_crowd(t, 5_000), "error"),
}  # fmt: skip
SCENARIOS.update(ISSUE51_SCENARIOS)


def _replace_json(
    argvs: tuple[list[str], list[str]], target: str, extra: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    bad, ok = argvs
    bad = list(bad)
    bad[bad.index("--json") + 1] = target
    return [*bad, *extra], ok


def measure(name: str, tmp: Path, root: Path = REPO_ROOT, timeout: float = 120.0) -> tuple[Run, Run]:
    """(hostile run, valid run) of scenario ``name`` built under ``tmp``."""
    build, _ = SCENARIOS[name]
    bad, ok = build(tmp)
    return run_child(bad, tmp, root=root, timeout=timeout), run_child(ok, tmp, root=root, timeout=timeout)


if __name__ == "__main__":  # python tests/cost_harness.py [ROOT] [NAME...]: print every row's cost
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else REPO_ROOT
    names = sys.argv[2:] or list(SCENARIOS)
    print(f"{'row':<26} {'rc':>4} {'s':>7} {'cpu s':>6} {'MB':>6} | {'valid s':>7} {'cpu s':>6} {'MB':>6}  stderr")
    for name in names:
        with tempfile.TemporaryDirectory() as folder:
            bad, ok = measure(name, Path(folder), root, timeout=90.0)
        line = (bad.stderr.strip().splitlines() or [""])[-1][:110]
        print(
            f"{name:<26} {bad.returncode:>4} {bad.seconds:7.2f} {bad.cpu_seconds:6.2f} {bad.peak_mb:6.0f} | "
            f"{ok.seconds:7.2f} {ok.cpu_seconds:6.2f} {ok.peak_mb:6.0f}  {line}",
            flush=True,
        )
