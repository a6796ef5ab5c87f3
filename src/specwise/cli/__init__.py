"""The ``specwise`` command line: one module per subcommand (parse -> dataclass -> library -> render)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from specwise import __version__
from specwise.cli import (
    advise,
    bench,
    check_pair,
    gpus,
    inspect_model,
    models,
    monitor,
    plan_memory,
    profile,
    simulate,
    speedup,
    validate,
)
from specwise.cli.common import EXIT_USAGE, Parser, UsageError
from specwise.errors import SpecwiseError

_COMMANDS = (
    advise,
    plan_memory,
    simulate,
    speedup,
    validate,
    profile,
    bench,
    monitor,
    check_pair,
    inspect_model,
    models,
    gpus,
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
        return code
    except SpecwiseError as exc:
        print(f"specwise {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
