"""Each apprise tag of a stage's pages becomes one outbox row per configured channel."""

from __future__ import annotations

from dataclasses import replace

from workers.runtime import Runtime
from workflows import payloads
from workflows.channel_kinds import reading_of, takes_html
from workflows.payloads import PagePayload
from workflows.stage_results import Outbound, StageResult, Via


def per_channel(runtime: Runtime, result: StageResult) -> StageResult:
    """Expand each apprise tag into one outbox row per configured channel, each channel once."""
    outbound: dict[tuple[str, str, int], Outbound] = {}
    for item in result.outbound:
        if item.channel is not Via.APPRISE:
            outbound.setdefault((item.purpose, item.target, item.step), item)
            continue
        found = runtime.channels.channels(item.target)
        # A tag with no channel is recorded and retried like any failure, so the gap shows.
        targets = [channel.name for channel in found] or [f"tag:{item.target}"]
        for target in targets:  # the primary comes first, so a shared channel stays primary
            outbound.setdefault((item.purpose, target, item.step), _in_its_form(item, target))
    return replace(result, outbound=tuple(outbound.values()))


def _in_its_form(item: Outbound, target: str) -> Outbound:
    """One channel's row: the message in the form that channel is read in."""
    reading = reading_of(target)
    written = payloads.page_forms(item.payload)
    form = written.get("forms", {}).get(reading)
    payload = PagePayload(tag=item.target)
    if "level" in written:  # a chain page's place in its chain
        payload["level"] = written["level"]
    if "round" in written:
        payload["round"] = written["round"]
    if not form:
        return replace(item, target=target, payload=payload)
    html = form["html"] if takes_html(target) else ""
    payload |= {"reading": reading, "html": html, "notify_type": form["notify_type"]}
    return replace(item, target=target, title=form["title"], body=form["body"], payload=payload)
