"""The configuration files shipped with drivemetrics, read through :mod:`importlib.resources`.

The files are package data, so they are found in a git checkout, an editable install and an installed wheel
alike:

- ``corridor.toml``: the defaults of :class:`drivemetrics.road.CorridorConfig` (read by ``load_corridor_config``);
- ``vehicles/rav4_2017.toml``: the Toyota RAV4 2017 preset of :class:`drivemetrics.vehicle.VehicleParams`;
- ``road_segmentation.yaml``, ``lane_psld_aux.yaml``, ``drp_attack.yaml``: the settings of the three training
  examples (``training_examples/``).

``drivemetrics config`` lists them and ``drivemetrics config NAME`` prints one (redirect it to a file to start
your own).

Examples:

    Examples:
        >>> from drivemetrics.configs import config_names, read_config
        >>> "corridor.toml" in config_names()
        True
        >>> read_config("corridor").splitlines()[0].startswith("#")
        True
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = ["config_file", "config_names", "config_path", "read_config"]

#: File suffixes of the shipped configs.
SUFFIXES = (".toml", ".yaml")


def _walk(folder: Traversable, prefix: str = "") -> list[str]:
    names = []
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.name.startswith(("_", ".")):
            names += _walk(entry, f"{prefix}{entry.name}/")
        elif entry.is_file() and entry.name.endswith(SUFFIXES):
            names.append(prefix + entry.name)
    return names


def config_names() -> list[str]:
    """The shipped configs, as paths relative to the package (``"corridor.toml"``, ``"vehicles/rav4_2017.toml"``)."""
    return sorted(_walk(files(__name__)))


def _resolve(name: str) -> str:
    """``name`` as listed by :func:`config_names`; the suffix may be left out (``"corridor"``)."""
    names = config_names()
    if name in names:
        return name
    matches = [n for n in names if n.rsplit(".", 1)[0] == name]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"no shipped config {name!r}; the configs are: {', '.join(names)}")


def config_file(name: str) -> Traversable:
    """The shipped config ``name`` (see :func:`config_names`; suffix optional) as an importlib resource."""
    return files(__name__).joinpath(*_resolve(name).split("/"))


def config_path(name: str) -> Path:
    """The shipped config ``name`` as a file-system path (the package is installed unzipped, as pip does)."""
    resource = config_file(name)
    if not isinstance(resource, Path):
        raise RuntimeError(f"drivemetrics is imported from an archive; read the config {name!r} with read_config")
    return resource


def read_config(name: str) -> str:
    """The text of the shipped config ``name`` (see :func:`config_names`; suffix optional)."""
    return config_file(name).read_text(encoding="utf-8")
