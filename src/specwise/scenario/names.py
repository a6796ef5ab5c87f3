"""Names a scenario gives (its ``name``, a workload's, a candidate's): printed as they are in tables, headlines and
reports, so a control character in one would act on the reader's terminal (``\\x1b[2J`` clears it; an ANSI colour
or a bidirectional override disguises what is printed -- "Trojan Source", Boucher and Anderson, CVE-2021-42574).
Refused when read, naming the file and field, rather than escaped at every place a name is printed."""

from __future__ import annotations

import unicodedata

from specwise.errors import SpecwiseError

# Unicode's explicit bidirectional formatting characters (Unicode TR #9, section 2): embeddings, overrides, isolates
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unprintable(text: str) -> str | None:
    """The first character of ``text`` that is a control character (Unicode category Cc: C0, DEL, C1) or a
    bidirectional formatting character, as ``repr`` writes it; None when there is none."""
    for ch in text:
        if unicodedata.category(ch) == "Cc" or ch in BIDI_CONTROLS:
            return repr(ch)
    return None


def checked_name(name: str, where: str) -> str:
    """``name``, refused (:class:`SpecwiseError` naming ``where``, e.g. ``"file.toml: name"``) when it holds a
    character that would act on a terminal instead of being printed."""
    bad = unprintable(name)
    if bad is not None:
        raise SpecwiseError(
            f"{where}: a name may not hold control characters (it is printed as it is), got {name!r} with {bad}"
        )
    return name
