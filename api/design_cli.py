"""`escalate design ...`: check a design record before a run relies on it (SPEC §2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from workflows.design import Design

design_app = typer.Typer(
    name="design",
    help="Check design records: triggers, never-escalate cases, severity tiers.",
    no_args_is_help=True,
)


@design_app.command("check")
def check(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Design record (YAML) to check.")],
) -> None:
    """Validate a design file: exit 0 and print a summary, or exit 1 listing each problem."""
    # Imported here so `escalate --help` and other commands do not pay for pydantic/yaml.
    from models.design_file import load_design
    from workflows.errors import DesignError

    try:
        design = load_design(file)
    except DesignError as exc:
        for problem in exc.problems:
            typer.echo(f"error: {exc.source}: {problem}")
        raise typer.Exit(1) from None
    for line in summarize(design, source=file):
        typer.echo(line)


def summarize(design: Design, *, source: str) -> list[str]:
    """The `ok:` line and one indented line per fact a reviewer checks before approving."""
    from workflows.design import SEVERITY_ORDER
    from workflows.durations import format_duration
    from workflows.vocabulary import TriggerType

    tiers = [(severity, design.tier(severity)) for severity in SEVERITY_ORDER]
    # ASCII arrows: this output is read in CI logs and terminals of any encoding.
    short = ", ".join(
        f"{s.value} {format_duration(t.window)}->{t.timeout_default.value}" for s, t in tiers
    )
    triggers = [
        f"{kind.value} (abort on timeout)" if kind is TriggerType.HARM_RISK else kind.value
        for kind in design.triggers
    ]
    lines = [
        f"ok: {source}: design {design.name!r} v{design.version}, tiers: {short}",
        f"  content_hash: {design.content_hash}",
        f"  triggers: {', '.join(triggers)}",
        f"  never_escalate: {', '.join(r.rule for r in design.never_escalate) or '-'}",
    ]
    for severity, tier in tiers:
        copies = f" (copies: {', '.join(tier.recipient.copies)})" if tier.recipient.copies else ""
        then = f", next tier {tier.next_tier.value}" if tier.next_tier else ""
        lines.append(
            f"  {severity.value}: window {format_duration(tier.window)}, timeout "
            f"{format_duration(tier.timeout)} -> {tier.timeout_default.value}, "
            f"to {tier.recipient.primary}{copies}, waiting {tier.waiting_behavior.value}{then}"
        )
        if tier.hours is not None:
            hours = tier.hours
            lines.append(
                f"    hours: {','.join(hours.days)} {hours.start:%H:%M}-{hours.end:%H:%M} "
                f"{hours.timezone} (pages below critical wait for them)"
            )
        if tier.chain is not None:
            levels = " -> ".join(
                f"+{format_duration(level.after)} {','.join(level.recipients)}"
                for level in tier.chain.levels
            )
            repeat = f", {tier.chain.repeat} more round(s)" if tier.chain.repeat else ""
            lines.append(f"    chain: {levels}{repeat}, stops on {tier.chain.stop_on.value}")
    return lines
