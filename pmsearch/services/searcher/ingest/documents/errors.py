"""Why an attached file was not read."""

from __future__ import annotations


class Unreadable(Exception):
    """A file refused on purpose (encrypted, a bomb, a legacy format): its reason goes
    into the message's notes, and the rest of the message is read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
