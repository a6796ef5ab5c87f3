"""User-facing errors.

Every mistake a user can make (unknown model, malformed file, impossible setting) raises
:class:`SpecwiseError` with a one-line message that says what is wrong and, where possible,
what to do instead. The CLI prints that line and exits non-zero; it never shows a traceback
for a ``SpecwiseError``.
"""


class SpecwiseError(Exception):
    """An error caused by the user's input, reported as one clear line."""


class SpecError(SpecwiseError, ValueError):
    """An invalid value in a spec dataclass (raised from ``__post_init__``; names the field)."""
