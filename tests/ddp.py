"""One harness for the 2-process gloo tests: spawn the ranks, run a worker in each, collect what it returns."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import torch.distributed as dist
import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _entry(rank: int, world: int, port: int, worker: Callable[..., Any], args: tuple, queue: Any) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        queue.put((rank, worker(rank, world, *args)))
    finally:
        dist.destroy_process_group()


def run_distributed(worker: Callable[..., Any], *args: Any, world: int = 2) -> list[Any]:
    """Call ``worker(rank, world, *args)`` in ``world`` spawned gloo processes; return the results by rank.

    ``worker`` must be a module-level function (it is pickled into the children) and return picklable values.
    """
    queue = mp.get_context("spawn").Queue()
    mp.spawn(_entry, args=(world, _free_port(), worker, args, queue), nprocs=world, join=True)
    results = dict(queue.get(timeout=60) for _ in range(world))
    return [results[rank] for rank in range(world)]
