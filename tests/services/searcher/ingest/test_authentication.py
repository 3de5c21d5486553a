"""A sender authenticated by the trusted MTA's Authentication-Results, and only by it."""

from __future__ import annotations

import pytest

from pmsearch.services.searcher.ingest.authentication import sender_auth
from pmsearch.services.searcher.ingest.parser import parse_message

from .mails import mail, raw

MTA = "mx.acme.example"
PASS = f"{MTA}; dkim=pass header.d=northwind.example header.s=s1; spf=pass smtp.mailfrom=northwind.example"
DMARC_FAIL = f"{MTA}; dkim=none; spf=fail smtp.mailfrom=northwind.example; dmarc=fail header.from=northwind.example"


@pytest.mark.parametrize(
    ("headers", "sender", "expected"),
    [
        ([PASS], "sabine@northwind.example", "pass"),
        ([PASS], "sabine@claims.northwind.example", "pass"),  # signed by a parent domain
        ([PASS], "sabine@northwind-claims.example", "none"),  # a signature of another domain
        ([f"{MTA}; dmarc=pass header.from=northwind.example"], "x@northwind.example", "pass"),
        ([DMARC_FAIL], "sabine@northwind.example", "fail"),
        ([f"{MTA}; spf=fail smtp.mailfrom=northwind.example"], "sabine@northwind.example", "fail"),
        ([f"{MTA}; spf=neutral smtp.mailfrom=northwind.example"], "sabine@northwind.example", "none"),
        ([], "sabine@northwind.example", "none"),
    ],
)
def test_the_trusted_mtas_results_say_whether_the_sender_is_authenticated(headers, sender, expected):
    assert sender_auth(headers, sender, [MTA]) == expected


def test_results_from_an_untrusted_server_or_below_one_count_for_nothing():
    forged = "mx.forger.example; dkim=pass header.d=northwind.example"
    assert sender_auth([forged], "sabine@northwind.example", [MTA]) == "none"
    # The MTA writes its own header on top; what the message came with is below it.
    assert sender_auth([DMARC_FAIL, PASS.replace(MTA, "mx.forger.example")], "sabine@northwind.example", [MTA]) == "fail"
    assert sender_auth([PASS], "sabine@northwind.example", []) == "none"  # no MTA trusted yet


def test_an_unreadable_header_stops_the_reading():
    assert sender_auth(["garbage ;;; ===", PASS], "sabine@northwind.example", [MTA]) == "none"


def test_the_parser_keeps_the_headers_topmost_first():
    parsed = parse_message(raw(mail(headers={"Authentication-Results": PASS})))
    assert parsed.authentication_results == [PASS]
