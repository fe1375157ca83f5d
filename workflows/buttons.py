"""Which answer buttons a message carries, and each platform's documented shape for them.

Safe options decide through the platform's verified path back to us; a destructive option
(workflows/judgement.destructive_labels) gets a link to its confirm page instead, so one tap
never does what cannot be undone. Safe options come first, so with ntfy's three buttons a
safe stop is never the one left out. Pure: the token and links are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from workflows.case import Option
from workflows.text import one_line

ACK_WORD = "ack"  # what an Ack button sends after the code (workflows/acknowledgements.py)
SLACK_TEXT_LIMIT = 3000  # a section block's text
SLACK_BUTTON_LIMIT = 75  # a button's plain_text
SLACK_ELEMENTS = 25  # elements in one actions block
TELEGRAM_CALLBACK_BYTES = 64  # callback_data, in bytes
TELEGRAM_TEXT_LIMIT = 4096
NTFY_ACTIONS = 3  # ntfy refuses a message with more
NTFY_LABEL = 24  # a phone's button shows about this much (SPEC §4: options of 24 at most)


class Press(StrEnum):
    """What a button does when pressed."""

    ANSWER = "answer"  # sends '<code> <option>' back through the platform's path
    CONFIRM = "confirm"  # opens the option's answer link: a page that asks before deciding
    ACK = "ack"  # sends '<code> ack': records who is on it, decides nothing
    OPEN = "open"  # opens the case page


@dataclass(frozen=True)
class Button:
    """One button: what it shows, what it does, the option it names ('' for ack/open)."""

    label: str
    press: Press
    option: str = ""
    destructive: bool = False  # shown as such (Slack's "danger" style)


def answer_buttons(
    options: Sequence[Option],
    destructive: frozenset[str],
    *,
    ack: bool,
    limit: int,
    answers_back: bool = True,
) -> list[Button]:
    """Safe options first (each answers), then destructive ones (each opens its confirm
    page), then Ack when asked for and room is left; at most `limit`. When a press could not
    reach us (`answers_back` False: the platform's inbound path is not configured), every
    option opens its answer link instead, and there is no Ack."""
    press = Press.ANSWER if answers_back else Press.CONFIRM
    ack = ack and answers_back
    safe = [Button(o.label, press, o.label) for o in options if o.label not in destructive]
    risky = [
        Button(o.label, Press.CONFIRM, o.label, destructive=True)
        for o in options
        if o.label in destructive
    ]
    buttons = (safe + risky)[:limit]
    if ack and len(buttons) < limit:
        buttons.append(Button("Ack: I'm on it", Press.ACK))
    return buttons


def slack_escaped(text: str) -> str:
    """Text for a Slack `text` field: the three characters Slack reads as markup escaped,
    so a run's "<https://evil|click>" stays words (blocks use plain_text instead)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_text(text: str) -> dict[str, Any]:
    """A message's `text` as words: escaped, and Slack's markup parsing switched off."""
    return {"text": slack_escaped(text)[:SLACK_TEXT_LIMIT], "mrkdwn": False}


def button_text(token: str, button: Button) -> str:
    """What an answering button sends: the same words a typed reply would."""
    return f"{token} {ACK_WORD if button.press is Press.ACK else button.option}"


def _short(label: str, limit: int) -> str:
    return one_line(label, limit)


def slack_message(
    title: str,
    body: str,
    buttons: Sequence[Button],
    *,
    token: str,
    links: Mapping[str, str],
    case_url: str,
) -> dict[str, Any]:
    """chat.postMessage's text and blocks (Block Kit): the message as plain text, never
    mrkdwn (the run's words stay words), then the buttons in one actions block."""
    elements: list[dict[str, Any]] = []
    for index, button in enumerate(buttons):
        element: dict[str, Any] = {
            "type": "button",
            "text": {"type": "plain_text", "text": _short(button.label, SLACK_BUTTON_LIMIT)},
            "action_id": f"escalate-{button.press}-{index}",
        }
        if button.press is Press.CONFIRM:
            element["url"] = links[button.option]
            if button.destructive:
                element["style"] = "danger"
        else:
            element["value"] = button_text(token, button)
            if button.press is Press.ANSWER and index == 0:
                element["style"] = "primary"
        elements.append(element)
    elements.append(
        {
            "type": "button",
            "text": {"type": "plain_text", "text": "Open the case"},
            "action_id": "escalate-open",
            "url": case_url,
        }
    )
    text = one_line(title, 150) + "\n" + body
    return {
        **slack_text(text),  # the notification's fallback text
        "blocks": [
            {
                "type": "section",
                "text": {"type": "plain_text", "text": text[:SLACK_TEXT_LIMIT], "emoji": False},
            },
            {
                "type": "actions",
                "block_id": "escalate-answers",
                "elements": elements[:SLACK_ELEMENTS],
            },
        ],
    }


def slack_settled(notice: str) -> dict[str, Any]:
    """chat.update's text and blocks once the case is over: the notice, no buttons left."""
    text = notice[:SLACK_TEXT_LIMIT]
    return {
        **slack_text(notice),
        "blocks": [{"type": "section", "text": {"type": "plain_text", "text": text}}],
    }


def telegram_keyboard(
    buttons: Sequence[Button], *, token: str, links: Mapping[str, str], case_url: str
) -> dict[str, Any]:
    """reply_markup with an inline keyboard, one button a row. An answer whose callback_data
    would pass Telegram's 64 bytes opens its answer link instead of answering in place."""
    rows: list[list[dict[str, str]]] = []
    for button in buttons:
        shown = _short(button.label, 64)
        data = button_text(token, button)
        if button.press is not Press.CONFIRM and len(data.encode()) <= TELEGRAM_CALLBACK_BYTES:
            rows.append([{"text": shown, "callback_data": data}])
        elif button.option in links:
            rows.append([{"text": shown, "url": links[button.option]}])
    rows.append([{"text": "Open the case", "url": case_url}])
    return {"inline_keyboard": rows}


def ntfy_actions(
    buttons: Sequence[Button], *, token: str, inbound_url: str, links: Mapping[str, str]
) -> list[dict[str, Any]]:
    """ntfy's JSON actions: `http` POSTs '<code> <option>' to our inbound URL and clears the
    notification; `view` opens a destructive option's confirm page."""
    actions: list[dict[str, Any]] = []
    for button in buttons[:NTFY_ACTIONS]:
        label = _short(button.label, NTFY_LABEL)
        if button.press is Press.CONFIRM:
            actions.append({"action": "view", "label": label, "url": links[button.option]})
        else:
            actions.append(
                {
                    "action": "http",
                    "label": label,
                    "url": inbound_url,
                    "method": "POST",
                    "body": button_text(token, button),
                    "clear": True,
                }
            )
    return actions
