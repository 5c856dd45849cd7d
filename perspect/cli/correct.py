"""`perspect correct` and `perspect corrections`: a reader's corrections of an index's answers."""

from __future__ import annotations

import argparse

from perspect.cli.common import add_home, console
from perspect.core.index.corrections import SIDES, as_json
from perspect.core.presentation.render import literal


def cmd_correct(args: argparse.Namespace) -> int:
    from perspect.api import Perspect

    with Perspect.open(args.index, home=args.home) as p:
        same = tuple(args.same) if args.same else None
        changed = p.correct(args.claim, args.perspective, args.side, same, undo=args.undo)
    what = (
        f"{args.perspective} is on {args.side}"
        if args.perspective
        else f"{args.same[0]} and {args.same[1]} make one point"
    )
    if args.undo:
        verb = "undone" if changed else "nothing to undo"
    else:
        verb = "stored" if changed else "stored already"
    console().print(f"[green]✓[/] {verb}: {literal(what)} (for “{literal(args.claim)}”)")
    return 0


def cmd_corrections(args: argparse.Namespace) -> int:
    from perspect.api import Perspect

    with Perspect.open(args.index, home=args.home) as p:
        got = p.corrections()
    if args.json:
        print(as_json(got))
        return 0
    if not got:
        console().print(f"no corrections in index {args.index!r}")
    for c in got:
        what = f"{c.a} → {c.b}" if c.kind == "side" else f"{c.a} = {c.b}"
        console().print(f"{c.made_at}  “{literal(c.claim)}”  {literal(what)}")
    return 0


def register(sub) -> None:
    """`perspect correct`, `perspect corrections`."""
    c = sub.add_parser(
        "correct",
        help="correct an answer: a perspective's side (or off-topic), or two that are the same",
    )
    c.add_argument("claim")
    c.add_argument("--index", default="default")
    one = c.add_mutually_exclusive_group(required=True)
    one.add_argument("--perspective", metavar="ID", help="the perspective whose side is wrong")
    one.add_argument("--same", nargs=2, metavar="ID", help="two perspectives that make one point")
    c.add_argument("--side", choices=SIDES, help="with --perspective: its side for this claim")
    c.add_argument("--undo", action="store_true", help="take this correction back")
    add_home(c)
    c.set_defaults(func=cmd_correct)
    ls = sub.add_parser("corrections", help="list the corrections stored for an index")
    ls.add_argument("--index", default="default")
    ls.add_argument("--json", action="store_true")
    add_home(ls)
    ls.set_defaults(func=cmd_corrections)
