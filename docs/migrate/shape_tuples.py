"""Mechanical pass: ``A x B x C`` -> ``(A, B, C)`` in the package's docstrings (double backticks) and `A x B` in
markdown (single backticks). Usage: python shapes.py FILE..."""

import re
import sys
from pathlib import Path

TOKEN = r"[A-Za-z0-9_+()*/.\[\]-]+(?: [+*/-] [A-Za-z0-9_()]+)*"
SHAPE = rf"{TOKEN}(?: x {TOKEN})+"
SKIP = {"x y x y"}


def convert(match: re.Match, tick: str) -> str:
    body = match.group(1)
    if body in SKIP or body.startswith("O(") or not re.search(r"[A-Za-z0-9]", body):
        return match.group(0)
    parts = body.split(" x ")
    if any(p in ("x", "y") for p in parts):
        return match.group(0)
    return f"{tick}({', '.join(parts)}){tick}"


for name in sys.argv[1:]:
    text = Path(name).read_text(encoding="utf-8")
    if name.endswith(".py"):
        new = re.sub(rf"``({SHAPE})``", lambda m: convert(m, "``"), text)
    else:
        new = re.sub(rf"(?<!`)`({SHAPE})`(?!`)", lambda m: convert(m, "`"), text)
    if new != text:
        Path(name).write_text(new, encoding="utf-8")
        print(name, sum(1 for _ in re.finditer(r"``?\(", new)) - sum(1 for _ in re.finditer(r"``?\(", text)))
