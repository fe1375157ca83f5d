"""The `escalate` console script: `check` takes a fast path that never imports typer."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["check"]:
        from api.check_cli import main as check_main

        sys.exit(check_main(sys.argv[2:]))
    from api.cli import main as cli_main

    cli_main()
