"""The full-screen app: a subscriber of the event bus and a sender of user intent, nothing more.

Widgets are grouped by panel (``chat``, ``tools``, ``mirror``, ``approval``, ``grants``,
``status``, ``prompt``, ``sessions``); ``app`` wires them to one ``SessionAPI`` through a
single adapter (``adapter``) that turns bus events into one Textual message per frame.
"""
