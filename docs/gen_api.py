"""Generate the API reference pages from the package's own export lists (an mkdocs hook, see ``mkdocs.yml``).

One page per domain package, ``api/<domain>.md``, lists every name of the package's ``_EXPORTS`` (lazy packages)
or ``__all__``, each rendered by mkdocstrings from the module that defines it; ``api/functional.md`` lists every
name that ``drivemetrics/functional.py`` imports. The lists are read statically (``ast``): nothing is imported,
so the pages follow renames and new domains without edits here. The pages exist only in the build (``site/``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "drivemetrics"
#: Packages that are not part of the public API reference (helpers of the tests / demo, the command line).
SKIP = ("demos",)


def _literal(tree: ast.Module, value: ast.expr) -> Any:
    """A literal, where a dict may splat another module-level dict by name (``{**_METRICS, "Name": "module"}``)."""
    if isinstance(value, ast.Dict) and any(key is None for key in value.keys):
        out: dict[Any, Any] = {}
        for key, item in zip(value.keys, value.values, strict=True):
            if key is None:
                out.update(_assigned(tree, item.id) if isinstance(item, ast.Name) else _literal(tree, item))
            else:
                out[ast.literal_eval(key)] = ast.literal_eval(item)
        return out
    return ast.literal_eval(value)


def _assigned(tree: ast.Module, name: str) -> Any:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return _literal(tree, node.value)
    return None


def package_exports(package: Path) -> dict[str, str]:
    """``{name: defining module}`` of a package: its ``_EXPORTS``, else its ``__all__`` (defined in the package)."""
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    dotted = "drivemetrics." + package.name
    exports = _assigned(tree, "_EXPORTS")
    if exports is not None:
        return dict(exports)
    names = _assigned(tree, "__all__") or []
    imported = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module if node.level == 0 else f"{dotted}.{node.module}"
            imported.update({alias.asname or alias.name: module for alias in node.names})
    return {name: imported.get(name, dotted) for name in names}


def functional_exports() -> dict[str, str]:
    """``{name: defining module}`` of ``drivemetrics.functional`` (its ``from ... import`` lines), if it exists."""
    path = PACKAGE / "functional.py"
    if not path.is_file():
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("drivemetrics")
        for alias in node.names
    }


def domains() -> list[str]:
    return sorted(
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file() and p.name not in SKIP and p.name[0] != "_"
    )


def _first_line(package: Path) -> str:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def _page(title: str, intro: str, exports: dict[str, str]) -> str:
    classes = sorted(n for n in exports if n[:1].isupper())
    functions = sorted(n for n in exports if not n[:1].isupper())
    lines = [f"# {title}", "", intro, ""]
    for heading, names in (("Classes", classes), ("Functions", functions)):
        if not names:
            continue
        lines += [f"## {heading}", ""]
        for name in names:
            lines += [f"::: {exports[name]}.{name}", "    options:", "      show_root_heading: true", ""]
    return "\n".join(lines)


def api_pages() -> dict[str, str]:
    """``{"api/<page>.md": markdown}`` of every API page."""
    pages = {}
    functional = functional_exports()
    if functional:
        intro = (
            "Every metric kernel and loss function in one flat namespace: `import drivemetrics.functional as F`. "
            "Kernels take `(preds, target, ...)` and return a `Tensor` or a `dict[str, Tensor]`."
        )
        pages["api/functional.md"] = _page("drivemetrics.functional", intro, functional)
    for name in domains():
        exports = package_exports(PACKAGE / name)
        if exports:
            pages[f"api/{name}.md"] = _page(f"drivemetrics.{name}", _first_line(PACKAGE / name), exports)
    index = ["# API reference", "", "Generated from the packages' export lists and docstrings.", ""]
    index += [f"- [`drivemetrics.{Path(p).stem}`]({Path(p).name})" for p in pages]
    pages["api/index.md"] = "\n".join(index) + "\n"
    return pages


# ------------------------------------------------------------------------------------------------- mkdocs hooks


def on_files(files: Any, config: Any) -> Any:
    """Add the generated API pages, and the committed result figures of ``benchmarks/results`` (linked from the
    pages under the same relative path), to the build (mkdocs >= 1.6 ``File.generated``)."""
    from mkdocs.structure.files import File

    for path, content in api_pages().items():
        files.append(File.generated(config, path, content=content))
    for image in sorted((PACKAGE.parent / "benchmarks" / "results").rglob("*.png")):
        uri = image.relative_to(PACKAGE.parent).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(image)))
    return files


def on_nav(nav: Any, config: Any, files: Any) -> Any:
    """Add the pages that ``nav`` in mkdocs.yml does not list: the generated API pages under "API reference", and a
    new ``domains/*.md`` page (a domain added since) under "Domains", so that no page is left out of the menu."""
    from mkdocs.structure.nav import Section

    listed = {page.file.src_uri for page in nav.pages}
    unlisted = [f for f in files.documentation_pages() if f.src_uri not in listed and f.page is not None]
    generated = sorted((f for f in unlisted if f.src_uri.startswith("api/")), key=_api_order)
    sections = {item.title: item for item in nav.items if isinstance(item, Section)}
    for file in sorted((f for f in unlisted if f.src_uri.startswith("domains/")), key=lambda f: f.src_uri):
        if "Domains" in sections:
            sections["Domains"].children.append(file.page)
            file.page.parent = sections["Domains"]
    section = Section("API reference", [f.page for f in generated])
    for page in section.children:
        page.parent = section
    nav.items.append(section)
    return nav


def _api_order(file: Any) -> tuple[int, str]:
    stem = Path(file.src_uri).stem
    return ({"index": 0, "functional": 1}.get(stem, 2), stem)
