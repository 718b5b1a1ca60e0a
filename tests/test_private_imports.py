"""No module imports another module's private (underscore) name (issue 37).

A name used by two modules is part of the package's interface: it is public (no underscore, in the defining
module's ``__all__``) or it moves to the module that uses it. ``drivemetrics._internal`` is the private package:
what its modules export is public within the package, so no underscore names are imported from there either.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "drivemetrics"


def private_imports(source: str, path: str) -> set[tuple[str, str, str]]:
    """``(path, module, name)`` of each ``from drivemetrics... import _name`` (absolute or relative) in ``source``."""
    found = set()
    package = ".".join(Path(path).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, module] if module else base)
        if not module.startswith("drivemetrics"):
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.add((path, module, alias.name))
    return found


def test_the_check_finds_a_private_import():
    source = "from drivemetrics.road.io import _read\nfrom .geometry import _arrays\nfrom drivemetrics.road import io"
    assert private_imports(source, "drivemetrics/lanegraph/apls.py") == {
        ("drivemetrics/lanegraph/apls.py", "drivemetrics.road.io", "_read"),
        ("drivemetrics/lanegraph/apls.py", "drivemetrics.lanegraph.geometry", "_arrays"),
    }


def test_no_module_imports_a_private_name_of_another():
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        found |= private_imports(path.read_text(encoding="utf-8"), relative)
    assert sorted(found) == []
