"""Quantisation what-if specs, parsed without torch (``draft=int8,target=int4``)."""

from __future__ import annotations

from collections.abc import Mapping

from specwise.errors import SpecwiseError

SCHEMES = ("int8", "int4", "fp8")
ROLES = ("draft", "target")


def parse_quantize(text: str) -> dict[str, str]:
    """``draft=int8,target=int4`` -> {"draft": "int8", "target": "int4"}."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        role, _, scheme = part.partition("=")
        role, scheme = role.strip(), scheme.strip().lower()
        if role not in ROLES:
            raise SpecwiseError(f"--quantize {text!r}: role {role!r} is not one of {', '.join(ROLES)}")
        if scheme not in SCHEMES:
            raise SpecwiseError(f"--quantize {text!r}: scheme {scheme!r} is not one of {', '.join(SCHEMES)}")
        if role in out:
            raise SpecwiseError(f"--quantize {text!r}: {role} given twice")
        out[role] = scheme
    if not out:
        raise SpecwiseError(f"--quantize {text!r}: expected ROLE=SCHEME[,ROLE=SCHEME], e.g. draft=int8,target=int4")
    return out


def label(quant: Mapping[str, str]) -> str:
    return ",".join(f"{r}={quant[r]}" for r in ROLES if r in quant) or "none"
