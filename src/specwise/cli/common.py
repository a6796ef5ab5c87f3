"""Shared CLI plumbing: one-line argument errors, value types, JSON output."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

from specwise import values
from specwise.contracts.document import json_safe
from specwise.errors import SpecwiseError
from specwise.executors import EXECUTOR_HELP, LOCAL, ExecutorSpec, parse_executor
from specwise.values import ValueRefusal

if TYPE_CHECKING:
    from specwise.perfmodel.factory import PredictorChoice

EXIT_OK = 0
EXIT_NEGATIVE = 1  # the command worked and its answer is "no" (does not fit, incompatible pair)
EXIT_USAGE = 2  # the user's input is wrong
EXIT_INTERNAL = 3  # a bug: one line on stderr, the traceback in a file
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shell's convention)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by :func:`specwise.cli.main`'s handler. A KeyboardInterrupt, so that every
    path that stops cleanly on Ctrl-C (the local pool ending its workers, bench's resume advice, monitor's closing
    line, profile's partial results) does the same on SIGTERM; ``main`` then says "terminated" and exits 143."""

    def __init__(self) -> None:
        super().__init__("terminated")


class StopSaid(KeyboardInterrupt):
    """A Ctrl-C or SIGTERM after which the command has said on stderr how it stopped and what it kept (bench's resume
    command, simulate's partial results): ``main`` exits 130 or 143 without a second, bare "interrupted" line."""


def signal_name(exc: KeyboardInterrupt) -> str:
    """What sent the stop, as a person typed or sent it: "SIGTERM" or "Ctrl-C"."""
    return "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"


def stop_word(exc: KeyboardInterrupt) -> str:
    """How the command was stopped, in the word ``main`` would print: "terminated" (SIGTERM) or "interrupted"."""
    return "terminated" if isinstance(exc, Terminated) else "interrupted"


class UsageError(Exception):
    """An argument error, reported as one line (argparse would print usage plus the error)."""


class OutputWriteError(OSError):
    """Writing the command's output to stdout failed (``> /dev/full``, a full disk, an I/O error where stdout
    goes): the environment's trouble, said in one line with exit 2, not a bug's traceback."""


@contextlib.contextmanager
def _output_errors() -> Iterator[None]:
    """An OSError of the stream as :class:`OutputWriteError`; a closed pipe stays BrokenPipeError."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputWriteError(*exc.args) from exc


class GuardedStdout:
    """``sys.stdout`` while a command runs: the real stream, whose failed write or flush is raised as
    :class:`OutputWriteError`, so the CLI tells it from the OSError of a bug. A closed pipe (``| head``: the
    reader's choice) sets :attr:`reader_gone` and the rest of the output goes nowhere: the command still finishes
    and exits with its own answer -- a "no" stays exit 1 under ``set -o pipefail``, an answer is not turned into
    one -- and a command that loops (monitor) stops at its next round (:func:`reader_gone`). Everything else
    (``fileno``, ``isatty``, ``encoding``) is the real stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_gone = False
        self.written = False  # whether the command has written anything (a "no" in --json then adds no document)

    @contextlib.contextmanager
    def _reader_may_go(self) -> Iterator[None]:
        """The stream's errors as :func:`_output_errors` raises them, but a closed pipe only marks the reader gone."""
        try:
            with _output_errors():
                yield
        except BrokenPipeError:
            self.reader_gone = True

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        if not self.reader_gone:
            with self._reader_may_go():
                return self.stream.write(text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            with self._reader_may_go():
                self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def reader_gone() -> bool:
    """Whether the reader of this command's stdout has gone (``| head`` read its lines): a loop stops."""
    return bool(getattr(sys.stdout, "reader_gone", False))


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        missing = re.fullmatch(r"argument (--[\w-]+)(?:/\S+)?: expected one argument", message)
        if missing:  # also what argparse says of a value that begins with '-' (--for -5m): it took it for a flag
            message += f"; a value that begins with '-' is written {missing.group(1)}=VALUE"
        raise UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, but arguments left over are refused by the subcommand that took the rest (``specwise
        gpus: error: ... (see 'specwise gpus --help')``), as its other errors are, not by the top-level parser."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._innermost(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        if hasattr(parsed, _SCENARIO_POSITIONAL):
            _one_scenario(parsed, self._innermost(parsed))
        return parsed

    def _innermost(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The (sub)parser of the command ``parsed`` names: this one when it names none."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(str(getattr(parsed, action.dest, None)))
                if chosen is not None:
                    return chosen._innermost(parsed) if isinstance(chosen, Parser) else chosen
        return self


_T = TypeVar("_T")


def argparse_type(check: Callable[..., _T]) -> Callable[..., _T]:
    """A library check (:mod:`specwise.values`) as an argparse type: its :class:`~specwise.values.ValueRefusal` is
    argparse's one-line error, which names the flag."""

    @functools.wraps(check)
    def parse(*args: Any) -> _T:
        try:
            return check(*args)
        except ValueRefusal as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def bounded(cast: Callable[[str], Any], what: str, **limits: Any) -> Callable[[str], Any]:
    """An argparse type: :func:`specwise.values.bounded` (``cast`` the text, check it against its keyword limits)."""
    return argparse_type(values.bounded(cast, what, **limits))


positive_int = argparse_type(values.positive_int)
non_negative_int = argparse_type(values.non_negative_int)
seed_int = argparse_type(values.seed_int)
fraction = argparse_type(values.fraction)
probability = argparse_type(values.probability)
alert_rate = argparse_type(values.alert_rate)
"""``--min-acceptance`` of ``monitor`` and ``export prometheus-rules``: the rate below which a replica alerts."""
non_negative_float = argparse_type(values.non_negative_float)
positive_float = argparse_type(values.positive_float)


def print_json(data: Any) -> None:
    json.dump(json_safe(data), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")


def stage_progress(bar: Any, quiet_s: float = 2.0) -> Callable[[str, int, int], None]:
    """A ``(stage, done, total)`` callback that gives each stage its own bar on a rich ``Progress``; when the bar
    is not shown (stderr is not a terminal: a CI log, a pipe) each stage still gets one line on stderr once the
    command has run ``quiet_s`` seconds -- from a timer, so a stage that reports only when it ends is announced
    while it runs. Work that ends (or fails) sooner prints nothing but its result; the timers end with the bar."""
    import threading
    import time

    tasks: dict[str, Any] = {}
    state: dict[str, tuple[int, int]] = {}
    printed: set[str] = set()
    lock = threading.Lock()
    start = time.monotonic()

    def announce(stage: str) -> None:
        with lock:
            if stage in printed or getattr(bar, "closed", False):
                return
            printed.add(stage)
            done, total = state[stage]
            print(f"[{time.monotonic() - start:6.1f} s] {stage} ({done}/{total})", file=sys.stderr, flush=True)

    def progress(stage: str, done: int, total: int) -> None:
        state[stage] = (done, total)
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
            wait_s = quiet_s - (time.monotonic() - start)
            if bar.disable and wait_s > 0 and done < total:
                timer = threading.Timer(wait_s, announce, (stage,))
                timer.daemon = True
                getattr(bar, "timers", []).append(timer)
                timer.start()
        if bar.disable and time.monotonic() - start >= quiet_s:
            announce(stage)
        bar.update(tasks[stage], completed=done)

    return progress


def add_predictor_flags(parser: argparse.ArgumentParser) -> None:
    """``--predictor`` and ``--calibration``: which step-time model the simulation runs on."""
    from specwise.perfmodel.factory import PREDICTORS

    parser.add_argument(
        "--predictor",
        choices=PREDICTORS,
        help="step-time model: published-fit (default; fitted to published vLLM measurements), roofline (analytic, "
        "optimistic under load), calibrated (needs --calibration)",
    )
    parser.add_argument(
        "--calibration",
        type=path_arg,
        metavar="FILE",
        help="a calibration file from specwise calibrate (on vllm bench serve --save-detailed results) or specwise "
        "bench --launch --calibrate: price steps with your server's measured step times",
    )


def refuse_without_scenario(args: argparse.Namespace, extra: tuple[str, ...] = ()) -> None:
    """``--k``, ``--predictor`` and ``--calibration`` (and ``extra``) act through a scenario: without ``--scenario``
    they are refused in one line (exit 2), never silently ignored (a corrupt calibration file would go unnoticed)."""
    flags = ("k", "predictor", "calibration", *extra)
    given = [f"--{flag.replace('_', '-')}" for flag in flags if getattr(args, flag, None) is not None]
    if given and getattr(args, "scenario", None) is None:
        raise SpecwiseError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --scenario")


def predictor_override(args: argparse.Namespace) -> PredictorChoice | None:
    """The flags' choice (None: the scenario's own); reads the calibration file."""
    from specwise.perfmodel.factory import predictor_choice

    return predictor_choice(args.predictor, args.calibration)


def http_url(text: str, form: str = "http://HOST:PORT") -> str:
    """An argparse type: an http(s) URL with a host and a valid port (userinfo allowed; never echoed); ``form`` is
    the shape its errors ask for (:func:`specwise.values.http_url`)."""
    return argparse_type(values.http_url)(text, form)


def non_empty(text: str) -> str:
    """An argparse type: any text but an empty or blank one (which would otherwise read as "not given")."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a non-empty value, got {text!r}")
    return text


def path_text(text: str) -> str:
    """An argparse type for every flag that names a file or directory (or a source such as ``hf:PATH``), as
    written: an empty one (an unset shell variable, ``--plot "$DIR"``) is refused, never read as ``Path("")``,
    which is ``.`` -- the current directory, where output would land unasked."""
    if text == "":
        raise argparse.ArgumentTypeError("empty path")
    return text


def path_arg(text: str) -> Path:
    """:func:`path_text` as a ``Path``: the type of every file or directory flag read as one."""
    return Path(path_text(text))


def metrics_url(text: str) -> str:
    """An argparse type: a server's /metrics URL (:func:`http_url`; its errors ask for http://HOST:PORT/metrics)."""
    return http_url(text, "http://HOST:PORT/metrics")


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


# Prometheus holds a duration as Go's time.Duration, int64 nanoseconds: ParseDuration (prometheus/common
# model/time.go) refuses anything longer ("duration out of range"), i.e. 2562047h47m16s854ms, about 292 years.
_PROMETHEUS_MAX_NS = 2**63 - 1
_DURATION_NS = {"ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9, "w": 604800 * 10**9}


def prometheus_duration(text: str) -> str:
    """An argparse type: a Prometheus duration (``90s``, ``10m``, ``1h30m``; units ms s m h d w), returned as
    written; a whole number is seconds (``90`` -> ``90s``). Longer than Prometheus can hold (about 292 years) is
    refused, as promtool would refuse the file."""
    from itertools import pairwise

    if re.fullmatch(r"\d+", text) and int(text) > 0:
        text = f"{int(text)}s"
    parts = re.findall(r"(\d+)(ms|s|m|h|d|w)", text)
    if not parts or "".join(n + u for n, u in parts) != text or duration_s(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 10m or 1h30m, got {text!r}")
    sizes = [_DURATION_NS[u] for _, u in parts]
    if any(a <= b for a, b in pairwise(sizes)):  # Prometheus' model.ParseDuration: w d h m s ms
        raise argparse.ArgumentTypeError(
            f"{text!r}: units go from the largest to the smallest, each once (w d h m s ms), as Prometheus reads "
            "them; e.g. 1h30m"
        )
    if sum(int(n) * _DURATION_NS[u] for n, u in parts) > _PROMETHEUS_MAX_NS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is longer than Prometheus can hold: at most 2562047h47m16s854ms (about 292 years; promtool says "
            "'duration out of range')"
        )
    return text


def duration_s(text: str) -> float:
    """Seconds in a duration :func:`prometheus_duration` accepted."""
    import re

    return sum(int(n) * _DURATION_UNITS[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d|w)", text))


def progress_bar(*columns: Any, disable: bool = False) -> Any:
    """A transient rich progress bar on stderr: stdout carries only results (tables, JSON), and nothing of the bar
    is left behind when it is not a terminal (where :func:`stage_progress` prints a line per stage instead)."""
    from rich.console import Console
    from rich.progress import Progress

    class _Bar(Progress):
        """A ``Progress`` that, on exit, stops the stage-announcing timers started for it."""

        timers: list[Any]
        closed = False

        def __exit__(self, *exc: Any) -> None:
            self.closed = True
            for timer in self.timers:
                timer.cancel()
            super().__exit__(*exc)

    console = Console(stderr=True)
    bar = _Bar(*columns, console=console, transient=True, disable=disable or not console.is_terminal)
    bar.timers = []
    return bar


def add_wide_flag(parser: argparse.ArgumentParser) -> None:
    """``--wide``: tables at their full width, never folded to fit the terminal."""
    parser.add_argument(
        "--wide",
        action="store_true",
        help="print tables at full width (no folding to fit the terminal; for wide terminals and pipes)",
    )


_SCENARIO_POSITIONAL = "scenario_positional"


def add_scenario_arg(parser: argparse.ArgumentParser, what: str) -> None:
    """The scenario a command reads, given either way: ``specwise advise FILE`` or ``specwise advise --scenario
    FILE`` (the flag the README and older scripts use). :meth:`Parser.parse_args` leaves it in ``args.scenario``
    and refuses neither or two different ones."""
    parser.add_argument(
        _SCENARIO_POSITIONAL, nargs="?", type=scenario_file, metavar="FILE", help=f"{what} (or example:NAME)"
    )
    parser.add_argument("--scenario", type=scenario_file, metavar="FILE", help="the same as FILE")


def _one_scenario(parsed: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    positional: Path | None = getattr(parsed, _SCENARIO_POSITIONAL)
    delattr(parsed, _SCENARIO_POSITIONAL)
    flag: Path | None = parsed.scenario
    if positional is not None and flag is not None and positional.resolve() != flag.resolve():
        parser.error(
            f"two scenarios given ({positional} and --scenario {flag}); give one (an argument without a flag is "
            "read as the scenario FILE)"
        )
    parsed.scenario = flag or positional
    if parsed.scenario is None:
        parser.error("the scenario is required: FILE or --scenario FILE")


def scenario_file(text: str) -> Path:
    """A ``--scenario`` value: a path, or ``example:NAME`` for a scenario shipped in the package."""
    from specwise.examples import EXAMPLE_PREFIX, scenario_example_path

    if not text.startswith(EXAMPLE_PREFIX):
        return path_arg(text)
    try:
        return scenario_example_path(text)
    except SpecwiseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def executor_spec(text: str) -> ExecutorSpec:
    """An argparse type for ``--executor``: the one parser (:func:`specwise.executors.parse_executor`)."""
    try:
        return parse_executor(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_executor_flags(parser: argparse.ArgumentParser, what: str = "simulation") -> None:
    """``--executor local|ray[:ADDRESS]`` and ``--processes N`` (the local pool's size, or a Ray cluster's CPUs)."""
    parser.add_argument(
        "--executor", type=executor_spec, default=LOCAL, metavar="local|ray[:ADDRESS]", help=EXECUTOR_HELP
    )
    parser.add_argument(
        "--processes",
        type=positive_int,
        help=f"{what} worker processes (default: CPU count; with --executor ray, the CPUs of the cluster it starts)",
    )
