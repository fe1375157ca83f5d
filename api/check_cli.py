"""`escalate check`, kept free of typer and every heavy import: shell loops run it each pass."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_PASS, EXIT_FAIL, EXIT_UNREADABLE = 0, 1, 2


def read_packet(path: str) -> Any:
    """Decode the packet file ('-' for stdin); raises OSError/ValueError/RecursionError."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return json.loads(text)


def run_check(
    packet: str | None,
    *,
    make_fixture: bool = False,
    make_valid: bool = False,
    as_json: bool = False,
    write: str | None = None,
) -> int:
    """Print the SPEC §1 report (or JSON) for one packet; return 0 PASS, 1 FAIL, 2 unreadable."""
    from workflows.packet_checks import check_packet, render_json, render_report
    from workflows.secrets import find_secrets

    if sum((packet is not None, make_fixture, make_valid)) != 1:
        print("error: give exactly one of PACKET, --make-fixture, --make-valid", file=sys.stderr)
        return EXIT_UNREADABLE
    if make_fixture or make_valid:
        from workflows import examples  # a packet file's check need not load them (nor copy)

        data: Any = examples.incomplete_packet() if make_fixture else examples.valid_packet()
    else:
        try:
            data = read_packet(str(packet))
        except (OSError, ValueError, RecursionError) as exc:
            print(f"error: cannot read packet: {exc}")
            return EXIT_UNREADABLE
    if write is not None:
        if packet is not None:
            print("error: --write goes with --make-fixture or --make-valid", file=sys.stderr)
            return EXIT_UNREADABLE
        try:  # the example as a file to start from: edit it, then `escalate check FILE`
            Path(write).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot write {write}: {exc.strerror}", file=sys.stderr)
            return EXIT_UNREADABLE
        print(f"wrote {write}", file=sys.stderr)
    result = check_packet(data, find_secrets=find_secrets)
    sys.stdout.write(render_json(result) if as_json else render_report(result))
    return EXIT_PASS if result.passed else EXIT_FAIL


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="escalate check",
        description="Check an escalation packet (SPEC §1): exit 0 PASS, 1 FAIL, 2 unreadable.",
    )
    parser.add_argument("packet", nargs="?", help="Packet JSON file, or - for standard input.")
    parser.add_argument(
        "--make-fixture", action="store_true", help="Check the built-in incomplete example."
    )
    parser.add_argument(
        "--make-valid", action="store_true", help="Check the built-in valid example."
    )
    parser.add_argument(
        "--json", dest="as_json", action="store_true", help="Print the result as JSON."
    )
    parser.add_argument(
        "--write",
        metavar="FILE",
        help="With --make-fixture or --make-valid: also write that example packet to FILE.",
    )
    args = parser.parse_args(argv)  # usage errors exit 2, like an unreadable packet
    # Only here, in the command's own short process: library callers of run_check keep their
    # modules as they are.
    from api.check_imports import defer_unused_imports

    defer_unused_imports()
    return run_check(
        args.packet,
        make_fixture=args.make_fixture,
        make_valid=args.make_valid,
        as_json=args.as_json,
        write=args.write,
    )
