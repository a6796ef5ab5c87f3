"""Parse only the metric families a reader uses: a line prefilter by exact sample name, then ``prometheus_client``'s
own parser for the lines kept.

A real vLLM /metrics page is ~54 KB and 640 lines; the monitor's windows read ~110 of them. Parsing the whole page
with ``prometheus_client`` costs ~9 ms of CPU; the prefilter drops every line whose metric name is not one of the
wanted sample names (exact match, never a prefix: ``..._accepted_tokens_total`` is not
``..._accepted_tokens_per_pos_total``), and the kept lines go through the real parser. The parser's answer for a
series (its name and labels) depends only on the text before the value, which does not change between scrapes, so
each distinct series text is parsed once by the real parser and remembered; later scrapes read only the value
(``prometheus_client``'s value rules: an int or a float, no ``_``). The result equals the full parse restricted to
the wanted names (tests/metrics/test_families.py checks the windows on every fixture page).

Where the text declares a counter family without ``_total`` (``# TYPE x counter`` then ``x 1``: the full parser
renames the sample ``x_total``) or nothing is kept at all (not exposition text, or no wanted family), the whole page
goes through :func:`~specwise.metrics.exposition.parse_exposition` instead, so invalid text is still one error.
Lines of families that are not wanted are not validated.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

from specwise.errors import SpecwiseError
from specwise.metrics.exposition import Labels, Sample, Scrape, labels_key, parse_exposition


def _name_of(line: str) -> str:
    """The metric name a sample line starts with (up to ``{``, a space or a tab)."""
    end = len(line)
    for sep in ("{", " ", "\t"):
        i = line.find(sep, 0, end)
        if i >= 0:
            end = i
    return line[:end]


def _value(rest: str) -> float:
    """The sample value after the series text, by ``prometheus_client``'s rules (first token; int or float)."""
    token = rest.split(None, 1)[0]
    if "_" in token:
        raise ValueError(token)
    return float(token)


class FamilyParser:
    """Parses exposition text down to the samples named in ``names``; one instance may serve many targets."""

    def __init__(self, names: Iterable[str], max_memo: int = 50_000) -> None:
        self.names = frozenset(names)
        self._renamed = frozenset(n[: -len("_total")] for n in self.names if n.endswith("_total"))
        self._prefixes = tuple(sorted(self.names))  # a C-speed first look at each line: str.startswith(tuple)
        self._type_prefixes = tuple(f"# TYPE {n} " for n in sorted(self.names | self._renamed))
        self._memo: dict[str, tuple[str, Labels]] = {}
        self._max_memo = max_memo

    def parse(self, text: str, source: str = "metrics") -> Scrape:
        """The wanted samples of ``text``; anything the parser rejects is one :class:`SpecwiseError` line."""
        kept, types = self._select(text)
        if kept is None or not kept:
            return self._full(text, source)
        samples: list[Sample] = []
        missing: list[tuple[int, str, str]] = []  # (index in samples, series text, line)
        for line in kept:
            head, rest = self._split(line)
            hit = self._memo.get(head)
            if hit is not None:
                try:
                    samples.append(Sample(hit[0], hit[1], _value(rest)))
                    continue
                except (ValueError, IndexError):
                    pass  # the real parser below says what is wrong with it
            missing.append((len(samples), head, line))
            samples.append(Sample("", (), 0.0))
        if missing:
            self._parse_missing(missing, samples, source)
        return Scrape(tuple(samples), types)

    def _select(self, text: str) -> tuple[list[str] | None, dict[str, str]]:
        """Kept sample lines and the declared types of kept families; None when the full parser must decide."""
        names, prefixes = self.names, self._prefixes
        kept: list[str] = []
        types: dict[str, str] = {}
        for line in text.split("\n"):
            if not line.startswith(prefixes):
                if line[:1] == "#":
                    if line.startswith(self._type_prefixes) and self._declares(line, types):
                        return None, {}  # the full parser renames these samples to ..._total
                    continue
                if line[:1] not in (" ", "\t") or not line.strip().startswith(prefixes):
                    continue
            line = line.strip()
            if _name_of(line) in names:
                kept.append(line)
        return kept, types

    def _declares(self, line: str, types: dict[str, str]) -> bool:
        """Record a kept family's ``# TYPE``; True for a counter declared without ``_total`` that is wanted with it."""
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in self.names:
            types[parts[2]] = parts[3].strip()
        return len(parts) == 4 and parts[3].strip() == "counter" and parts[2] in self._renamed

    @staticmethod
    def _split(line: str) -> tuple[str, str]:
        """(series text, the rest: value and optional timestamp)."""
        if "{" in line:
            end = line.rfind("}") + 1
            return line[:end], line[end:]
        name = _name_of(line)
        return name, line[len(name) :]

    def _parse_missing(self, missing: list[tuple[int, str, str]], samples: list[Sample], source: str) -> None:
        """Series seen for the first time (or with a value the fast path refused): the real parser, then remembered."""
        try:
            parsed = [
                s for f in text_string_to_metric_families("\n".join(m[2] for m in missing) + "\n") for s in f.samples
            ]
            if len(parsed) != len(missing):
                raise ValueError(f"expected {len(missing)} samples, parsed {len(parsed)}")
            if len(self._memo) + len(missing) > self._max_memo:
                self._memo.clear()
            for (index, head, _line), s in zip(missing, parsed, strict=True):
                name, labels = str(s.name), labels_key(s.labels)
                samples[index] = Sample(name, labels, float(s.value))
                self._memo[head] = (name, labels)
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise SpecwiseError(f"{source}: not valid Prometheus exposition text ({first[:200]})") from None

    def _full(self, text: str, source: str) -> Scrape:
        scrape = parse_exposition(text, source)
        return Scrape(tuple(s for s in scrape.samples if s.name in self.names), scrape.types)
