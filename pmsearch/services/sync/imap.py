"""One IMAP connection of a source, on IMAPClient.

IMAPClient (not aioimaplib): it parses FETCH, SEARCH and SELECT responses into Python
values, speaks IDLE, STARTTLS and XOAUTH2, and is kept up to date; its calls block, so
the worker runs them in a thread (:func:`asyncio.to_thread`), one connection per
thread. Every failure leaves here as a :class:`~.errors.ServerError` whose kind says how
the server failed and whose line names the source, never its user or secret.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import imapclient
from imapclient.exceptions import IMAPClientError, LoginError

from pmsearch.services.sync.config import Source
from pmsearch.services.sync.errors import ServerError

TIMEOUT_SECONDS = 60.0
# UIDs fetched in one FETCH command: a bounded reply, and progress saved between them.
FETCH_CHUNK = 50


@dataclass(frozen=True)
class FolderStatus:
    uidvalidity: int
    uidnext: int
    exists: int


@contextmanager
def _failures(source: Source, doing: str) -> Iterator[None]:
    """Turn what the client and the network raise into ServerErrors of one line."""
    try:
        yield
    except ServerError:
        raise
    except LoginError:
        raise ServerError("auth", f"{source.name}: the server refused the login") from None
    except (ssl.SSLCertVerificationError, ssl.CertificateError) as exc:
        reason = getattr(exc, "verify_message", None) or "certificate not trusted"
        raise ServerError("tls", f"{source.name}: TLS certificate refused ({reason})") from None
    except ssl.SSLError as exc:
        raise ServerError("tls", f"{source.name}: TLS failed ({exc.reason or exc})") from None
    except TimeoutError:
        raise ServerError("connect", f"{source.name}: the server did not answer while {doing}") from None
    except OSError as exc:
        raise ServerError("connect", f"{source.name}: cannot reach the server ({exc.strerror or exc})") from None
    except IMAPClientError as exc:
        raise ServerError("protocol", f"{source.name}: the server failed while {doing}: {exc}") from None


class Connection:
    """A logged-in IMAP connection of one source."""

    def __init__(self, source: Source, client: imapclient.IMAPClient) -> None:
        self.source = source
        self._client = client

    @classmethod
    def open(cls, source: Source) -> Connection:
        """Connect (implicit TLS or STARTTLS, the certificate checked against the system's
        CAs or the source's ``ca_file``) and log in with the password or the bearer token."""
        context = ssl.create_default_context(cafile=str(source.ca_file) if source.ca_file else None)
        host, port = source.address
        with _failures(source, "connecting"):
            client = imapclient.IMAPClient(
                host, port=port, ssl=source.tls == "implicit", ssl_context=context, timeout=TIMEOUT_SECONDS
            )
        try:
            with _failures(source, "logging in"):
                if source.tls == "starttls":
                    client.starttls(context)
                secret = source.secret().get_secret_value()
                if source.auth == "xoauth2":
                    client.oauth2_login(source.user, secret)
                else:
                    client.login(source.user, secret)
        except BaseException:
            _quietly_close(client)
            raise
        return cls(source, client)

    @property
    def can_idle(self) -> bool:
        return self._client.has_capability("IDLE")

    def select(self, folder: str) -> FolderStatus:
        with _failures(self.source, "opening a folder"):
            status = self._client.select_folder(folder, readonly=True)
        return FolderStatus(int(status[b"UIDVALIDITY"]), int(status.get(b"UIDNEXT", 0)), int(status[b"EXISTS"]))

    def uids(self) -> list[int]:
        """Every UID of the selected folder, ascending."""
        with _failures(self.source, "listing a folder"):
            return sorted(self._client.search(["ALL"]))

    def deleted(self) -> set[int]:
        """The UIDs of the selected folder flagged \\Deleted and not yet expunged."""
        with _failures(self.source, "listing deleted messages"):
            return set(self._client.search(["DELETED"]))

    def sizes(self, uids: list[int]) -> dict[int, int]:
        out: dict[int, int] = {}
        for start in range(0, len(uids), FETCH_CHUNK * 20):
            with _failures(self.source, "reading message sizes"):
                reply = self._client.fetch(uids[start:start + FETCH_CHUNK * 20], ["RFC822.SIZE"])
            out.update({uid: int(data[b"RFC822.SIZE"]) for uid, data in reply.items()})
        return out

    def fetch(self, uids: list[int]) -> dict[int, bytes]:
        """The raw messages (BODY.PEEK[]: fetching marks nothing \\Seen)."""
        with _failures(self.source, "fetching messages"):
            reply = self._client.fetch(uids, ["BODY.PEEK[]"])
        return {uid: data[b"BODY[]"] for uid, data in reply.items() if b"BODY[]" in data}

    def wait(self, seconds: float) -> bool:
        """Wait in IDLE for the selected folder to change, at most ``seconds``; whether
        the server said something changed."""
        with _failures(self.source, "waiting in IDLE"):
            self._client.idle()
            try:
                responses = self._client.idle_check(timeout=seconds)
            finally:
                self._client.idle_done()
        return bool(responses)

    def close(self) -> None:
        _quietly_close(self._client)


def _quietly_close(client: imapclient.IMAPClient) -> None:
    try:
        client.logout()
    except Exception:  # a connection already broken has nothing left to close
        try:
            client.shutdown()
        except Exception:
            pass
