"""Pages and resolution notices sent through the platforms' own APIs, with answer buttons.

Slack channels with a bot token, Telegram and ntfy are sent natively: the page carries the
buttons of workflows/buttons.py, and where it landed is kept on the outbox row
(platform_refs), so the case's end updates it in place (chat.update, editMessageText, an
ntfy re-publish with the same sequence id) as well as sending the short notice. A send
that reached some targets and not others keeps their refs: a retry sends only the rest.
"""

from __future__ import annotations

import logging

from sqlmodel import col, select

from models.db import transaction
from models.store import case_of
from models.tables import Delivery, Escalation
from workers import ntfy_api, slack_api, telegram_api
from workers.answering import answer_links, case_token
from workers.answers import dangers_of
from workers.channels import Channel, SendOutcome, retried
from workers.native_steps import (
    IN_PLACE,
    Extras,
    Ref,
    ntfy_steps,
    slack_steps,
    telegram_steps,
)
from workers.runtime import Runtime
from workflows.acknowledgements import read_acknowledgement
from workflows.buttons import NTFY_ACTIONS, SLACK_ELEMENTS, answer_buttons
from workflows.notifications import CHAT_ANSWER, CHAT_BUTTONS_ANSWER
from workflows.stage_results import PAGES, DeliveryState, Purpose

log = logging.getLogger(__name__)


def is_native(channel: Channel) -> bool:
    """Whether this channel is sent here rather than through apprise."""
    service = channel.service
    return any(
        found is not None
        for found in (
            slack_api.bot_of(service),
            telegram_api.bot_of(service),
            ntfy_api.server_of(service),
        )
    )


def send(
    runtime: Runtime, delivery: Delivery, channel: Channel, *, title: str, body: str
) -> SendOutcome:
    """Send one outbox row natively; call only when is_native(channel)."""
    done: list[Ref] = [dict(ref) for ref in delivery.platform_refs or []]
    if delivery.purpose in PAGES:
        extras = _page_extras(runtime, delivery)
        originals: list[Ref] = []
    else:
        extras = None
        originals = _originals(runtime, delivery) if delivery.purpose == Purpose.RESOLUTION else []
    settings = runtime.settings
    timeout = settings.send_timeout
    service = channel.service
    if extras is not None:  # a chat page that carries buttons says so (ntfy's already does)
        body = body.replace(CHAT_ANSWER, CHAT_BUTTONS_ANSWER, 1)

    def attempt() -> SendOutcome:
        if (bot := slack_api.bot_of(service)) is not None:
            steps = slack_steps(
                settings.slack_api_url, bot, title, body, extras, originals, timeout
            )
        elif (tg := telegram_api.bot_of(service)) is not None:
            steps = telegram_steps(
                settings.telegram_api_url, tg, title, body, extras, originals, timeout
            )
        else:
            server = ntfy_api.server_of(service)
            assert server is not None
            steps = ntfy_steps(server, delivery, title, body, extras, timeout)
        for key, step in steps:
            if any(ref.get("key") == key for ref in done):
                continue  # landed on an earlier try
            posted, ref = step()
            if posted.state is not DeliveryState.SENT and key.startswith(IN_PLACE):
                # The page may be gone (deleted, too old to edit): the notice still goes out.
                log.warning("could not update the page in place: %s", posted.error)
                continue
            if posted.state is not DeliveryState.SENT:
                return SendOutcome(posted.state, posted.error, refs=tuple(done))
            done.append({"key": key, **ref})
        return SendOutcome(DeliveryState.SENT, refs=tuple(done))

    return retried(
        attempt,
        name=channel.name,
        tries=settings.delivery_tries,
        first_backoff=settings.delivery_backoff,
    )


def _page_extras(runtime: Runtime, delivery: Delivery) -> Extras:
    settings = runtime.settings
    public = settings.resolved_public_url
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, delivery.escalation_id)
        assert row is not None
        options = list(case_of(row).options)
        destructive = frozenset(dangers_of(session, row))
        token = case_token(runtime.answer_key, row.id, row.pipeline)
    tag = str(delivery.payload.get("tag", ""))
    labels = [o.label for o in options]
    links = answer_links(runtime.answer_key, public, delivery.escalation_id, labels, via=tag)
    # An Ack button only where "ack" cannot be read as one of the case's options.
    ack = read_acknowledgement("ack", options) is not None
    ntfy = delivery.target.startswith(("ntfy://", "ntfys://"))
    limit = NTFY_ACTIONS if ntfy else SLACK_ELEMENTS - 1  # Slack's last one opens the case
    # A press must have a way back: Slack's signing secret, Telegram's webhook or poller.
    if delivery.target.startswith("slack://"):
        answers_back = bool(settings.slack_signing_secret)
    elif delivery.target.startswith(("tgram://", "tgrams://")):
        answers_back = bool(settings.telegram_secret or settings.telegram_bot_token)
    else:
        answers_back = True  # ntfy's http action reaches our public URL
    return Extras(
        token,
        answer_buttons(options, destructive, ack=ack, limit=limit, answers_back=answers_back),
        links,
        f"{public}/dashboard/cases/{delivery.escalation_id}",
        f"{public}/v1/inbound/ntfy",
    )


def _originals(runtime: Runtime, delivery: Delivery) -> list[Ref]:
    """Where this channel's pages of the case landed: what the notice updates in place."""
    with transaction(runtime.engine) as session:
        rows = session.exec(
            select(Delivery)
            .where(
                Delivery.escalation_id == delivery.escalation_id,
                Delivery.target == delivery.target,
                col(Delivery.purpose).in_(list(PAGES)),
            )
            .order_by(col(Delivery.id))
        ).all()
        return [dict(ref) for row in rows for ref in row.platform_refs or []]
