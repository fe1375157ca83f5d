"""Real local peers a channel test reads from: an SMTP server and an MQTT subscriber."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

from aiosmtpd.controller import Controller

from tests.support.services import require
from tests.support.waiting import wait_until

MOSQUITTO = ("127.0.0.1", 1883)


@dataclass
class Mailbox:
    """Every message the SMTP server accepted, parsed by the standard `email` package."""

    messages: list[EmailMessage] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
        parsed = BytesParser(policy=policy.default).parsebytes(envelope.content)
        with self.changed:
            self.messages.append(parsed)  # type: ignore[arg-type]
            self.changed.notify_all()
        return "250 OK"

    def wait(self, count: int = 1, timeout: float = 60) -> list[EmailMessage]:
        return wait_until(
            lambda: list(self.messages),
            lambda got: len(got) >= count,
            timeout=timeout,
            what=f"{count} mail(s)",
            changed=self.changed,
        )


@contextmanager
def smtp_server() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    with socket.socket() as probe:  # the controller checks its port by connecting: not 0
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


@dataclass
class Subscriber:
    """Payloads published on one MQTT topic, as a paho subscriber saw them."""

    payloads: list[bytes] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait(self, count: int = 1, timeout: float = 60) -> list[bytes]:
        return wait_until(
            lambda: list(self.payloads),
            lambda got: len(got) >= count,
            timeout=timeout,
            what=f"{count} MQTT message(s)",
            changed=self.changed,
        )


@contextmanager
def mqtt_subscriber(topic: str) -> Iterator[Subscriber]:
    import paho.mqtt.client as mqtt

    require(MOSQUITTO, "Mosquitto")
    subscriber = Subscriber()
    subscribed = threading.Event()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)

    def on_message(_client: Any, _data: Any, message: Any) -> None:
        with subscriber.changed:
            subscriber.payloads.append(message.payload)
            subscriber.changed.notify_all()

    client.on_message = on_message
    client.on_subscribe = lambda *_args: subscribed.set()
    client.connect(*MOSQUITTO)
    client.subscribe(topic, qos=1)
    client.loop_start()
    try:
        assert subscribed.wait(5), "the MQTT subscription was not acknowledged"
        yield subscriber
    finally:
        client.loop_stop()
        client.disconnect()
