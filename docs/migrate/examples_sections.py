"""Mechanical pass: docstring ``Example:`` -> ``Examples:`` (the Google section griffe renders as code), and a bare
``>>>`` block (not under a section) gets an ``Examples:`` header with the block indented under it."""

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path


def docstring_ranges(tree: ast.Module) -> Iterator[tuple[int, int]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno - 1, first.end_lineno - 1  # 0-based inclusive


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


for name in sys.argv[1:]:
    original = Path(name).read_text(encoding="utf-8")
    lines = original.split("\n")
    tree = ast.parse("\n".join(lines))
    edits = []  # (start, end) ranges processed bottom-up
    for start, end in sorted(docstring_ranges(tree), reverse=True):
        seg = lines[start : end + 1]
        # base indentation: of the docstring's continuation lines (the closing quotes' line)
        base = indent_of(seg[-1]) if len(seg) > 1 else 0
        out, i, changed = [], 0, False
        while i < len(seg):
            line = seg[i]
            if re.fullmatch(r"\s*Example:\s*", line):
                out.append(line.replace("Example:", "Examples:"))
                changed = True
                i += 1
                continue
            stripped = line.strip()
            if stripped.startswith(">>>") and indent_of(line) == base and i > 0:
                # a bare block: is it under a section header already? (a less-indented "X:" line above)
                above = [l for l in out[1:] if l.strip()]
                header = next((h for h in reversed(above) if indent_of(h) < base + 1 and h.strip().endswith(":")), None)
                if header is None or header.strip() not in ("Examples:",):
                    if out and out[-1].strip():
                        out.append("")
                    out.append(" " * base + "Examples:")
                    while i < len(seg) and seg[i].strip() and not seg[i].strip().startswith(('"""', "'''")):
                        out.append("    " + seg[i] if seg[i].strip() else seg[i])
                        i += 1
                    changed = True
                    continue
            out.append(line)
            i += 1
        if changed:
            lines[start : end + 1] = out
    new = "\n".join(lines)
    if new != original:
        Path(name).write_text(new, encoding="utf-8")
        print(name)
