"""Adapters for replies arriving from chat platforms: verify, then translate to InboundMessage.

One module per outside system (slack, telegram, ntfy). They are pure functions of the raw
request (plus the clock where it matters); the HTTP endpoints and the store are elsewhere.
"""
