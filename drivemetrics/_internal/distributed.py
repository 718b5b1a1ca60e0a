"""Dataset commands across processes and machines (``torchrun``): each rank evaluates its shard of the frames.

Under ``torchrun`` (``WORLD_SIZE`` > 1 in the environment) the ``drivemetrics`` command enters
:func:`distributed_from_env`: it initialises the default process group (NCCL when CUDA is available, else
gloo), and :func:`current_shard` then tells a dataset evaluation which frames are its own and how to combine the
per-frame results; only rank 0 prints and writes outputs. Outside it (one process, or the Python API without the
command) :func:`current_shard` is the whole dataset, so the same code runs unchanged.

A command that supports it, in four steps::

    shard = current_shard()
    mine = shard.take(frames)  # frames[rank::world]
    results = [evaluate(frame) for frame in mine]  # per-frame rows: counts, matches, scores, ...
    frames = shard.gather_frames(keys=shard.indices(len(frames)), scores=RaggedRows.from_frames(...))
    # every rank now holds every frame's rows, in the one-process frame order; rank 0 reports:
    if shard.is_main: write(...)

:meth:`Shard.gather_frames` runs :func:`drivemetrics._internal.ragged.gather_ragged` (one gather whatever each rank
holds, none included) and sorts the frames by key (the global frame index), so the pooled results, and the
outputs, are those of one process. :meth:`Shard.sum` adds counters over the ranks. Strings (names, types)
travel as UTF-8 bytes (:func:`strings_to_bytes`). A rank that fails exits with an error; torchrun then stops the
others.

Commands that do not shard their frames run on rank 0 alone (the others exit at once).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import Tensor

from drivemetrics._internal.ragged import Frames, RaggedRows, gather_ragged, sort_frames

__all__ = ["Shard", "bytes_to_strings", "current_shard", "distributed_from_env", "strings_to_bytes"]

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """This process's part of a dataset evaluation: rank ``rank`` of ``world`` processes.

    ``device`` is where collective tensors live (the rank's CUDA device under NCCL, else the CPU).

    Examples:
        >>> from drivemetrics._internal.distributed import Shard
        >>> shard = Shard(rank=1, world=3)
        >>> shard.take(["a", "b", "c", "d", "e"]), shard.indices(5), shard.is_main
        (['b', 'e'], [1, 4], False)
    """

    rank: int = 0
    world: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    group: Any = None

    @property
    def is_main(self) -> bool:
        """Whether this rank prints and writes the outputs (rank 0)."""
        return self.rank == 0

    def indices(self, count: int) -> list[int]:
        """This rank's indices among ``count`` frames: ``rank, rank + world, ...``."""
        return list(range(self.rank, count, self.world))

    def take(self, items: Sequence[T]) -> list[T]:
        """This rank's frames: ``items[rank::world]``."""
        return list(items[self.rank :: self.world])

    def gather_frames(self, keys: Sequence[int] | Tensor, **fields: RaggedRows) -> Frames:
        """Every rank's frames on every rank, sorted by key (stable): see :func:`~.ragged.gather_ragged`.

        Args:
            keys: one int per local frame, e.g. its index in the whole dataset (:meth:`indices`).
            fields: name -> :class:`~.ragged.RaggedRows` of the local frames (same fields, row shapes
                and dtypes on every rank).
        """
        key_tensor = torch.as_tensor(keys, dtype=torch.int64).reshape(-1).to(self.device)
        moved = {name: RaggedRows(f.rows.to(self.device), f.lengths.to(self.device)) for name, f in fields.items()}
        if self.world > 1:
            key_tensor, moved = gather_ragged(key_tensor, moved, group=self.group)
        return Frames(*sort_frames(key_tensor, moved))

    def sum(self, values: Tensor) -> Tensor:
        """``values`` summed over the ranks (a copy, on every rank)."""
        total = values.detach().to(self.device).clone()
        if self.world > 1:
            dist.all_reduce(total, op=dist.ReduceOp.SUM, group=self.group)
        return total


_CURRENT: list[Shard] = [Shard()]


def current_shard() -> Shard:
    """The shard of the running command (inside :func:`distributed_from_env`), else the whole dataset."""
    return _CURRENT[-1]


def world_size_from_env() -> int:
    """``WORLD_SIZE`` as set by torchrun (1 when unset)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError as error:
        raise ValueError(f"WORLD_SIZE must be an integer, got {os.environ['WORLD_SIZE']!r}") from error


@contextmanager
def distributed_from_env() -> Iterator[Shard]:
    """Join the process group torchrun describes in the environment (when ``WORLD_SIZE`` > 1) for the block.

    Uses NCCL (one CUDA device per rank: ``LOCAL_RANK``) when CUDA is available, else gloo. A process group that
    is already initialised is used as it is (and left open). One process: a whole-dataset :class:`Shard`.
    """
    world = world_size_from_env()
    if world == 1 and not dist.is_initialized():
        yield current_shard()
        return
    created = not dist.is_initialized()
    if created:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)
    backend = dist.get_backend()
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    shard = Shard(rank=dist.get_rank(), world=dist.get_world_size(), device=device)
    _CURRENT.append(shard)
    try:
        yield shard
    finally:
        _CURRENT.pop()
        if created:
            dist.destroy_process_group()


def strings_to_bytes(strings: Sequence[str]) -> Tensor:
    """``strings`` as one uint8 tensor (UTF-8, each followed by a NUL byte): a frame's rows of width 1.

    Examples:
        >>> from drivemetrics._internal.distributed import bytes_to_strings
        >>> from drivemetrics._internal.distributed import strings_to_bytes
        >>> bytes_to_strings(strings_to_bytes(["Car", "DontCare", ""]))
        ['Car', 'DontCare', '']
    """
    return torch.tensor(list(b"".join(s.encode("utf-8") + b"\0" for s in strings)), dtype=torch.uint8)


def bytes_to_strings(data: Tensor) -> list[str]:
    """The strings of :func:`strings_to_bytes`."""
    raw = bytes(data.reshape(-1).cpu().tolist())
    return [part.decode("utf-8") for part in raw.split(b"\0")[:-1]]
