"""Rendering: terminal tables (rich) built from the same data the ``--json`` output carries."""
