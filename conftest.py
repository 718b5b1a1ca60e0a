"""The doctests run in a fresh namespace: every ``>>>`` example imports what it uses (copy-paste runnable).

``tests/fresh_doctests.py`` empties each example's namespace (``--doctest-modules`` would otherwise hand it the
module's globals); see ``docs/pages/conventions.md``.
"""

pytest_plugins = ["tests.fresh_doctests"]
