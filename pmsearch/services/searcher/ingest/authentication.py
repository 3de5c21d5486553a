"""Whether a message's sender is authenticated, from the Authentication-Results headers
(RFC 8601) an MTA the operator trusts wrote on it.

Anyone can write any header, so a result counts only from a trusted ``authserv-id``
(``PM_TRUSTED_AUTHSERV_IDS``: the receiving MTA's name, which it writes on every message
and strips from what arrives from outside), and only the topmost headers of it are read:
the MTA adds its own above whatever the message came with.

* ``pass``: DMARC passed for the From domain, or DKIM passed for a signing domain
  aligned with it (the same domain or one of its parents);
* ``fail``: DMARC failed, or DKIM or SPF failed and no aligned DKIM signature passed;
* ``none``: no trusted result, or nothing conclusive (no deployment trusts any
  ``authserv-id`` until it says which).

The result is stored with the message and shown with its evidence; a rule that lets one
message override another (a correction supersedes what it corrects) believes a sender
no less authenticated than the one it overrides (pmsearch/services/verifier/corrections.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import authres

SenderAuth = Literal["pass", "fail", "none"]


def sender_auth(headers: Sequence[str], from_address: str, trusted: Iterable[str]) -> SenderAuth:
    """The sender's authentication by the trusted topmost ``headers`` (topmost first)."""
    trusted_ids = {t.casefold() for t in trusted}
    domain = from_address.rpartition("@")[2].casefold()
    if not trusted_ids or not domain:
        return "none"
    results = []
    for raw in headers:
        try:
            header = authres.AuthenticationResultsHeader.parse_value(raw)
        except authres.AuthResError:
            break  # unreadable: nothing below it can be told from a forger's
        if (header.authserv_id or "").casefold() not in trusted_ids:
            break  # the trusted headers are the topmost; below them anyone wrote
        results.extend(header.results)
    methods = {(r.method or "").casefold(): r for r in results}
    dmarc = methods.get("dmarc")
    if dmarc is not None and (dmarc.result or "").casefold() == "pass" and _aligned(_value(dmarc, "from"), domain):
        return "pass"
    if any(
        (r.method or "").casefold() == "dkim" and (r.result or "").casefold() == "pass" and _aligned(_value(r, "d"), domain)
        for r in results
    ):
        return "pass"
    if dmarc is not None and (dmarc.result or "").casefold() == "fail":
        return "fail"
    if any((r.method or "").casefold() in ("dkim", "spf") and (r.result or "").casefold() == "fail" for r in results):
        return "fail"
    return "none"


def _value(result: authres.core.AuthenticationResult, name: str) -> str:
    return next((str(p.value) for p in result.properties if (p.name or "").casefold() == name), "")


def _aligned(signer: str, domain: str) -> bool:
    """``signer`` is ``domain`` or one of its parents (relaxed alignment, without the
    public-suffix list: a signer of one label, "com", never aligns)."""
    signer = signer.casefold().strip(".")
    return bool(signer) and "." in signer and (domain == signer or domain.endswith("." + signer))
