"""Optional dependencies: which ``pip install 'specwise[EXTRA]'`` brings which module, and the one-line error
when a command needs one that is not installed.

The core install holds what ``plan-memory``, ``simulate``, ``advise --json`` and ``monitor`` need (issue 14:
matplotlib alone was ~95 MB of a 262 MB install). Modules named here are imported only where they are used.
"""

from __future__ import annotations

import importlib.util

from specwise.errors import SpecwiseError

# module -> the extra that installs it (pyproject.toml [project.optional-dependencies])
EXTRA_FOR: dict[str, str] = {
    "matplotlib": "report",
    "tokenizers": "tokenizers",
    "torch": "profile",
    "transformers": "profile",
    "ray": "ray",
    "datasets": "datasets",
}


def available(module: str) -> bool:
    """Whether ``module`` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module stub without a spec
        return False


def missing_extra(module: str, purpose: str) -> SpecwiseError:
    """The error for a missing optional module: ``PURPOSE needs MODULE: pip install 'specwise[EXTRA]'``."""
    return SpecwiseError(f"{purpose} needs {module}: pip install 'specwise[{EXTRA_FOR[module]}]'")


def require(module: str, purpose: str) -> None:
    """Raise :func:`missing_extra` unless ``module`` is installed (call before the work that needs it)."""
    if not available(module):
        raise missing_extra(module, purpose)
