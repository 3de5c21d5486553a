"""Snippets are HTML: mail text in them is escaped, and <mark> is the only tag."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

from pmsearch.services.searcher.repository import mark_snippet

HOSTILE_HTML = b"""From: Mallory <mallory@evil.example>
To: alice@acme.example
Subject: Quarterly zanzibarite report
Date: Mon, 04 Mar 2024 10:00:00 +0000
Message-ID: <xss-snippet-1@evil.example>
MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<html><body><p>The zanzibarite figures &lt;img src=x onerror=alert(1)&gt; are in.
<script>alert(2)</script> &lt;script&gt;alert(3)&lt;/script&gt; zanzibarite again.</p></body></html>
"""


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def tags_of(fragment: str) -> list[str]:
    parser = _Tags()
    parser.feed(fragment)
    parser.close()
    return parser.tags


def test_hostile_html_mail_yields_a_snippet_without_live_tags(api):
    mailbox = "sec-snippets"
    ingest = api.http.post(
        "/v1/admin/ingest",
        json={"tenant_id": "acme", "mailbox": mailbox, "raw": [base64.b64encode(HOSTILE_HTML).decode()]},
        headers=api.admin_headers,
    )
    assert ingest.status_code == 200, ingest.text
    key = api.new_key(tenant_id="acme", principal="sec-snippets", mailboxes=[mailbox], permissions=["search"])
    resp = api.search(key, query="zanzibarite", mode="keyword", limit=5)
    assert resp.status_code == 200, resp.text
    [hit] = resp.json()["hits"]
    snippet = hit["snippet"]
    assert set(tags_of(snippet)) == {"mark"}
    assert "&lt;img src=x onerror=alert(1)&gt;" in snippet
    assert "<mark>zanzibarite</mark>" in snippet


def test_escaping_keeps_the_highlight_and_the_text():
    snippet = mark_snippet('Tom & Jerry <b>"invoice"</b> INV-7', "invoice INV-7")
    assert snippet == 'Tom &amp; Jerry &lt;b&gt;&quot;<mark>invoice</mark>&quot;&lt;/b&gt; <mark>INV-7</mark>'
    assert tags_of(snippet) == ["mark", "mark"]


def test_snippet_drops_control_characters():
    snippet = mark_snippet("paid \x1b[31mred\x1b[0m \u202eevil\u202c invoice", "invoice")
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e]", snippet)
    assert "<mark>invoice</mark>" in snippet
