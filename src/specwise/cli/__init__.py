"""The ``specwise`` command line: one module per subcommand (parse -> dataclass -> library -> render)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TextIO, cast

from specwise import __version__
from specwise.cli import (
    advise,
    bench,
    calibrate,
    check_pair,
    completion,
    drafts,
    examples,
    export,
    gpus,
    inspect_model,
    models,
    monitor,
    plan_memory,
    profile,
    prompts,
    simulate,
    speedup,
    validate,
)
from specwise.cli.common import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NEGATIVE,
    EXIT_USAGE,
    GuardedStdout,
    OutputWriteError,
    Parser,
    StopSaid,
    Terminated,
    UsageError,
)
from specwise.contracts.document import NEGATIVE_SCHEMA
from specwise.errors import NegativeAnswer, SpecwiseError, redact_text

log = logging.getLogger("specwise")


class _Redacting(logging.Filter):
    """A log record's text with every URL credential and secret-looking query value masked
    (:func:`specwise.errors.redact_text`): what ``-v`` prints never holds an API key or a password."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_text(record.getMessage()), None
        return True


_REDACT = _Redacting()

EXIT_TERMINATED = 143  # SIGTERM (128 + 15): kill PID, docker stop, a CI runner's or systemd's stop


_COMMANDS = (
    advise,
    plan_memory,
    simulate,
    speedup,
    validate,
    profile,
    prompts,
    bench,
    calibrate,
    monitor,
    export,
    check_pair,
    drafts,
    inspect_model,
    models,
    gpus,
    examples,
    completion,
)


def build_parser() -> Parser:
    parser = Parser(
        prog="specwise",
        description="Will speculative decoding make your vLLM deployment faster or slower, and with which "
        "configuration?",
    )
    parser.add_argument("--version", action="version", version=f"specwise {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in _COMMANDS:
        module.register(sub)
    for command in sub.choices.values():  # -v after the command too (specwise plan-memory ... -v)
        _add_verbose(command)
    return parser


def _add_verbose(parser: argparse.ArgumentParser) -> None:
    """``-v`` on a (sub)command and its own subcommands, unless it already has one; its default leaves the
    top-level flag's value alone."""
    if "-v" not in parser._option_string_actions:
        parser.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log debug details to stderr"
        )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_verbose(child)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)  # exit 2 says it: a usage error, on stderr with the others
        return EXIT_USAGE
    if sys.stdout is None:  # started with stdout closed (>&-): Python has no stream to write the answer to
        with contextlib.suppress(AttributeError, OSError):
            print(
                f"specwise {args.command}: error: cannot write the output: standard output is closed", file=sys.stderr
            )
        return EXIT_USAGE
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    verbose = [logging.getLogger(name) for name in ("specwise", "httpx")] if args.verbose else []
    levels = [logger.level for logger in verbose]
    for logger in verbose:  # specwise's own details, and its HTTP client's requests (bench, monitor): not
        logger.setLevel(logging.DEBUG)  # every library's (matplotlib's font cache, asyncio's selector)
        logger.addFilter(_REDACT)  # httpx logs each request's URL as given: user:password@, ?token=
    log.debug("specwise %s (specwise %s, Python %s)", args.command, __version__, sys.version.split()[0])
    started_s = time.monotonic()
    stdout = sys.stdout
    sys.stdout = cast(TextIO, GuardedStdout(stdout))
    terms: list[int] = []
    try:
        with _sigterm_raises(terms):
            code: int = args.handler(args)
            sys.stdout.flush()  # what is still buffered: a failed write shows here, not as Python exits
        if isinstance(sys.stdout, GuardedStdout) and sys.stdout.reader_gone:
            _silence(stdout)  # nothing left for Python to flush into the closed pipe at exit
        log.debug("specwise %s: exit %d after %.1f s", args.command, code, time.monotonic() - started_s)
        return EXIT_TERMINATED if terms and code == EXIT_INTERRUPTED else code  # a command that ended its own way
    except NegativeAnswer as exc:  # the input is fine; its answer is no
        print(f"specwise {args.command}: no: {exc}", file=sys.stderr)
        _negative_json(args, exc)
        return EXIT_NEGATIVE
    except SpecwiseError as exc:
        print(f"specwise {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OutputWriteError as exc:  # > /dev/full, a full disk: the environment, not a bug
        _silence(stdout)
        print(f"specwise {args.command}: error: cannot write the output: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        if not isinstance(exc, StopSaid):  # review s59: a second, bare "interrupted" after bench's resume line
            print("terminated" if terms else "interrupted", file=sys.stderr)
        return EXIT_TERMINATED if terms else EXIT_INTERRUPTED
    except BrokenPipeError as exc:  # not stdout's (GuardedStdout takes that quietly): stderr, a subprocess's pipe
        _silence(stdout)
        with contextlib.suppress(OSError):
            print(f"specwise {args.command}: error: a pipe closed: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:
        print(
            f"specwise {args.command}: error: out of memory (the input asks for more than this machine has)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    except Exception as exc:  # a bug, never the user's "no": one line, the traceback in a file, exit 3
        where = crash_report(args.command, argv)
        print(
            f"specwise {args.command}: internal error: {type(exc).__name__}: {exc} (a bug; traceback in {where})",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    finally:
        if isinstance(sys.stdout, GuardedStdout):
            sys.stdout = stdout
        for logger, level in zip(verbose, levels, strict=True):  # as they were: a process may run main again
            logger.setLevel(level)
            logger.removeFilter(_REDACT)


def _negative_json(args: argparse.Namespace, exc: NegativeAnswer) -> None:
    """With ``--json``, a "no" found before the command could write its report is a document on stdout too
    (schema ``specwise.no/1``: the command, ``answer`` "no" and ``why``), as ``plan-memory --json`` gives its own:
    a script reading stdout gets JSON for every answer, not an empty input. Nothing is added after the command
    has written (its own document says it)."""
    out = sys.stdout
    if getattr(args, "json", None) is not True or not isinstance(out, GuardedStdout) or out.written:
        return
    doc = {"schema": NEGATIVE_SCHEMA.id, "command": args.command, "answer": "no", "why": str(exc)}
    print(json.dumps(doc, indent=2))
    out.flush()


@contextlib.contextmanager
def _sigterm_raises(terms: list[int]) -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`Terminated` (noted in ``terms``) as Ctrl-C raises
    KeyboardInterrupt; a second SIGTERM while the first is handled kills at once (the default action; the local
    pool's workers die with the process). The previous handler is back afterwards (tests call :func:`main` in
    process); nothing changes outside the main thread, where Python cannot set a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        terms.append(signum)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)  # None: not set by Python


def _silence(stdout: TextIO) -> None:
    """Send what stdout still buffers to /dev/null: Python flushes it as it exits, and a second failure there
    would print "Exception ignored" and exit 120 (the remedy Python's documentation gives for SIGPIPE)."""
    import os

    with contextlib.suppress(OSError, ValueError):  # a stream with no descriptor (a test's) holds nothing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)


def crash_report(command: str, argv: Sequence[str] | None) -> str:
    """Write the current exception's traceback under the cache directory; the path, or a note if it failed."""
    import os
    import tempfile
    import time
    import traceback

    from specwise.errors import redact_text

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specwise" / "crashes"
    try:
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{command}-{os.getpid()}.txt"
        args = [redact_text(a) for a in (argv or sys.argv[1:])]  # URL credentials never reach the disk
        path.write_text(f"specwise {command} {args!r}\n\n{redact_text(traceback.format_exc())}")
        return str(path)
    except OSError:
        fd, name = tempfile.mkstemp(prefix="specwise-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(redact_text(traceback.format_exc()))
        return name


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
