"""pmsearch.shared.textcache: work on small texts is kept, on large ones done afresh."""

from __future__ import annotations

from pmsearch.shared.textcache import cached_text


def test_a_small_text_is_worked_on_once_and_a_large_one_every_time():
    calls = []

    @cached_text(maxsize=8, limit=10)
    def upper(text: str, parts: tuple[str, ...] = ()) -> str:
        calls.append(text)
        return text.upper() + "".join(parts)

    assert upper("mail") == upper("mail") == "MAIL"
    assert upper("a" * 11) == upper("a" * 11)
    assert upper("ab", ("x" * 9,)) == upper("ab", ("x" * 9,))  # 11 characters with the tuple's
    assert calls == ["mail", "a" * 11, "a" * 11, "ab", "ab"]
