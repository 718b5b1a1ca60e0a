"""No Metric class of the package writes into a state tensor in place (static check of the source, issue 35).

Lightning's ``ddp_spawn`` pickles the model to the spawned workers with ``torch.multiprocessing``, which moves
every CPU tensor into shared memory: the workers' states and the parent's are one buffer. ``self.tp += n`` then
adds every worker's counts into the same memory (VectorMap mAP logged at half its value); ``self.tp = self.tp + n``
gives each process its own tensor. The rule, for every class that keeps Metric states (a subclass of ``Metric``,
or a mixin that adds or appends to states): never

- augmented-assign an attribute of ``self`` (``self.x += y``, also for Python numbers and lists: one rule);
- assign into an item or slice of an attribute (``self.x[i] = y``, ``self.x[mask] += y``);
- call an in-place tensor method (a name ending in one ``_``: ``add_``, ``copy_``, ``index_add_``, ...) on an
  attribute, an item of one or ``getattr(self, ...)``;
- pass an attribute as ``out=`` (``torch.add(a, b, out=self.x)``);

also through a local alias (``state = self.x`` or ``metric = self``). ``append`` / ``extend`` of list states
are allowed (a list is copied into each process). The spawn battery in tests/test_metric_battery.py checks the
behaviour at run time.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "drivemetrics"
#: base names that make a class keep Metric states
STATE_BASES = {"Metric", "RaggedStateMixin"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript):  # Generic[...]
        return _base_name(node.value)
    return ""


def _is_inplace_method(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__") and not name.startswith("_")


class _MethodChecker(ast.NodeVisitor):
    """Finds in-place writes to ``self`` attributes in one function (aliases tracked by name, in source order)."""

    def __init__(self, path: str, self_name: str) -> None:
        self.path = path
        self.self_names = {self_name}
        self.state_aliases: set[str] = set()
        self.findings: list[Finding] = []

    def _is_self(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.self_names

    def _refers_to_state(self, node: ast.expr) -> bool:
        """``self.x``, ``self.x[...]``, ``getattr(self, ...)`` (and items of it), or an alias of one."""
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name):
            return node.id in self.state_aliases
        if isinstance(node, ast.Attribute):
            return self._is_self(node.value)
        if isinstance(node, ast.Call) and _base_name(node.func) == "getattr" and node.args:
            return self._is_self(node.args[0])
        return False

    def _add(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(self.path, node.lineno, what))

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._assigned(target, node.value, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._assigned(node.target, node.value, node)

    def _assigned(self, target: ast.expr, value: ast.expr, node: ast.AST) -> None:
        if isinstance(target, ast.Subscript) and self._refers_to_state(target.value):
            self._add(node, f"item assignment into a state: {ast.unparse(target)} = ...")
        if isinstance(target, ast.Name):
            if self._is_self(value):
                self.self_names.add(target.id)
            elif self._refers_to_state(value):
                self.state_aliases.add(target.id)
            else:  # rebound to something else
                self.self_names.discard(target.id)
                self.state_aliases.discard(target.id)
        for child in ast.iter_child_nodes(target):
            if isinstance(child, ast.expr) and not isinstance(child, ast.Name):
                self.visit(child)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self._refers_to_state(node.target):
            self._add(node, f"in-place update of a state: {ast.unparse(node).strip()}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and _is_inplace_method(func.attr) and self._refers_to_state(func.value):
            self._add(node, f"in-place method on a state: {ast.unparse(func)}(...)")
        for keyword in node.keywords:
            if keyword.arg == "out" and self._refers_to_state(keyword.value):
                self._add(node, f"state written through out=: {ast.unparse(keyword.value)}")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # nested functions: same aliases, checked too
        self.generic_visit(node)


def _keeps_states(node: ast.ClassDef, state_bases: set[str]) -> bool:
    """One of its bases is named in ``state_bases``, or its body adds or appends states."""
    if {_base_name(base) for base in node.bases} & state_bases:
        return True
    return any(
        isinstance(call, ast.Call) and _base_name(call.func) in {"add_state", "add_ragged_state", "append_frames"}
        for call in ast.walk(node)
    )


def find_inplace_state_updates(source: str, path: str = "<source>", extra_bases: set[str] = frozenset()) -> list:
    """In-place writes to states in the classes of ``source`` that keep Metric states (see the module docstring).
    A class keeps states when one of its bases is named in :data:`STATE_BASES` or ``extra_bases`` (the Metric
    classes of the whole package: a family defined in another module), or when it calls ``add_state``.
    """
    tree = ast.parse(source)
    bases = STATE_BASES | set(extra_bases)
    findings: list[Finding] = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        if not _keeps_states(cls, bases):
            continue
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args:
                checker = _MethodChecker(path, item.args.args[0].arg)
                for statement in item.body:
                    checker.visit(statement)
                findings += checker.findings
    return findings


def _package_state_class_names(trees: dict[str, ast.Module]) -> set[str]:
    """Names of the package's classes that keep states, through bases defined in other modules (a fixpoint)."""
    names = set(STATE_BASES)
    classes = [node for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    changed = True
    while changed:
        changed = False
        for node in classes:
            if node.name not in names and _keeps_states(node, names):
                names.add(node.name)
                changed = True
    return names


def _package_sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE.parent)): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


# ----------------------------------------------------------------------------------------------------------------


def test_no_metric_state_is_updated_in_place():
    sources = _package_sources()
    names = _package_state_class_names({path: ast.parse(text) for path, text in sources.items()})
    assert {"VectorMapAPMetrics", "OpenLaneV2Score", "CULaneF1Score", "PSLD", "OptJMetrics"} <= names
    findings = [f for path, text in sources.items() for f in find_inplace_state_updates(text, path, names)]
    assert not findings, "in-place updates of Metric states (write self.x = self.x + y):\n" + "\n".join(
        map(str, findings)
    )


CAUGHT = """
class Counts(Metric):
    def update(self, preds, target):
        self.tp += preds.sum()
        self.fp[0] = 1
        self.fn.add_(target.sum())
        torch.add(self.tn, 1, out=self.tn)
        state = self.count
        state.mul_(2)
        getattr(self, "total").copy_(preds.sum())
        self.rows[-1].index_add_(0, preds, target)
        self.hist[preds > 0] += 1


class Ragged(RaggedStateMixin, Counts):
    def append(self, key):
        metric = self
        getattr(metric, "ragged_keys")[0].zero_()
        metric.count -= 1

    def helper(self):
        def inner():
            self.total *= 2
        return inner
"""

CLEAN = """
class Counts(Metric):
    def update(self, preds, target):
        self.tp = self.tp + preds.sum()
        self.rows.append(preds)
        getattr(self, "ragged_keys").append(target)
        scratch = torch.zeros(3)
        scratch += 1
        scratch.add_(preds.sum())
        scratch[0] = 2
        total = preds.clone()
        total.add_(1)
        state = self.count
        state = state + 1
        self.count = state


class NotAMetric:
    def step(self, grad):
        self.t += 1
        self.m.mul_(0.9)
"""


def test_the_check_catches_every_in_place_pattern():
    lines = sorted(f.line for f in find_inplace_state_updates(CAUGHT))
    assert lines == [4, 5, 6, 7, 9, 10, 11, 12, 18, 19, 23], lines


def test_the_check_passes_out_of_place_updates_and_other_classes():
    assert find_inplace_state_updates(CLEAN) == []


def test_a_family_defined_in_another_module_is_checked():
    source = "class Scalar(Family):\n    def update(self, x):\n        self.n += 1\n"
    assert find_inplace_state_updates(source) == []  # Family unknown here
    assert [f.line for f in find_inplace_state_updates(source, extra_bases={"Family"})] == [3]
