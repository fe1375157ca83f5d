"""Who may decide a case: a tier's deciders and the run owner's own harm_risk cases."""

from __future__ import annotations

from dataclasses import dataclass

from workflows.design import Design
from workflows.identities import holder_key, is_system, matches
from workflows.vocabulary import Severity


@dataclass(frozen=True)
class Verdict:
    """Whether a responder may make this decision, and one line why."""

    allowed: bool
    reason: str


def may_decide(
    design: Design,
    *,
    severity: str,
    trigger_type: str,
    responder: str,
    owner: str | None,
    resumes: bool,
    verified: bool = False,
) -> Verdict:
    """Apply the tier's deciders, then the owner rule; the service itself may always decide.

    The owner rule (owner_may_not_approve): the owner may not approve its own case, and
    since only a `verified` responder is known not to be the owner, an unverified one (a
    link, an ntfy button, a chat bridge) may not approve such a case either: it may stop it.
    """
    if is_system(responder):
        return Verdict(True, "the service's own decision (a timeout default)")
    tier, name = design.tier(severity), Severity(severity).value
    shown = " ".join(responder.split()) or "an unnamed responder"  # reasons stay one line
    if tier.deciders and not any(matches(p, responder) for p in tier.deciders):
        return Verdict(
            False,
            f"{shown} may not decide: the {name} tier may be decided only by "
            f"{', '.join(tier.deciders)}",
        )
    guarded = owner is not None and resumes and trigger_type in design.owner_may_not_approve
    if guarded and not verified:
        return Verdict(
            False,
            f"an unverified answer ({shown}) may not approve a {trigger_type} case that has "
            "an owner, only stop it; approve from the dashboard, the API or a verified chat",
        )
    if guarded and owner is not None and holder_key(owner) == holder_key(responder):
        return Verdict(
            False,
            f"the run's owner may not approve its own {trigger_type} case; another decider must",
        )
    if tier.deciders:
        return Verdict(True, f"{shown} is a decider for the {name} tier")
    return Verdict(True, f"the {name} tier names no deciders: anyone the case reached may decide")
