"""``specwise examples``: the example scenarios shipped inside the package: list them, print one, copy them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from specwise.cli.common import EXIT_OK, add_json_flag, add_wide_flag, non_empty, path_arg, print_json
from specwise.errors import SpecwiseError
from specwise.examples import copy_examples, example_text, find_example, list_examples
from specwise.report.examples import render_copy, render_examples


def register(sub: Any) -> None:
    p = sub.add_parser(
        "examples",
        help="list, print or copy the example scenarios shipped in the package",
        description="The example scenarios and launch files shipped inside the package (the repository's "
        "examples/). Without NAME: list them. With NAME: print that file. With --copy DIR: copy them (or NAME) "
        "under DIR with their layout (DIR/advise/...), so 'specwise examples --copy examples' gives the "
        "README's examples/ paths. A scenario flag also takes example:NAME.",
    )
    p.add_argument("name", nargs="?", type=non_empty, metavar="NAME", help="an example, e.g. advise/summarize-low-qps")
    p.add_argument("--copy", type=path_arg, metavar="DIR", help="copy the examples (or NAME) under DIR")
    p.add_argument("--force", action="store_true", help="with --copy: overwrite files whose contents differ")
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.force and args.copy is None:
        raise SpecwiseError("--force: it overwrites what --copy DIR writes; give --copy DIR")
    if args.name is not None and not args.name.strip():  # "$NAME" unset: an error, not the whole list
        raise SpecwiseError(
            "empty NAME: give an example's name (specwise examples lists them), or no NAME to list them"
        )
    chosen = [find_example(args.name)] if args.name is not None else list_examples()
    if args.copy is not None:
        result = copy_examples(args.copy, chosen, force=args.force)
        if args.json:
            print_json({"written": [str(p) for p in result.written], "unchanged": [str(p) for p in result.unchanged]})
        else:
            render_copy(result, str(args.copy))
    elif args.name is not None and not args.json:
        sys.stdout.write(example_text(chosen[0]))
    elif args.name is not None:
        print_json({**chosen[0].to_json(), "text": example_text(chosen[0])})
    elif args.json:
        print_json([e.to_json() for e in chosen])
    else:
        render_examples(chosen, wide=args.wide)
    return EXIT_OK
