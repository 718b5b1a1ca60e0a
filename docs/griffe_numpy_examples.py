"""A griffe extension for the docs build: a numpy-style ``Examples`` section (``Examples`` underlined with dashes)
inside a Google-style docstring (``Args:`` / ``Returns:``) becomes a Google ``Examples:`` section, so that its
``>>>`` lines render as code. Both spellings run as doctests; the site renders both alike."""

from __future__ import annotations

import re
from typing import Any

import griffe

_UNDERLINE = re.compile(r"^-{3,}\s*$")


def google_examples(text: str) -> str:
    """``text`` with every numpy ``Examples`` / ``--------`` section rewritten as an indented ``Examples:``."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("Examples", "Example") and i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            out.append(f"{indent}Examples:")
            i += 2
            while i < len(lines):
                following = lines[i + 1] if i + 1 < len(lines) else ""
                if lines[i].strip() and _UNDERLINE.match(following):  # the next numpy section
                    break
                out.append(f"{indent}    {lines[i][len(indent) :]}" if lines[i].strip() else lines[i])
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


class NumpyExamples(griffe.Extension):
    """Rewrite numpy ``Examples`` sections before mkdocstrings parses the docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "---" in obj.docstring.value:
            obj.docstring.value = google_examples(obj.docstring.value)
