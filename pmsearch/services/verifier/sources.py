"""The run's stored evidence, prepared for matching: each part of each message normalised
once (lazily, only when a sentence cites the message) and cut into word tokens.

A message has searchable parts: its body (``part="body"``: the sender's own words, a
signature and a forwarded message, without what it quotes), each attachment's text
(``"attachment:<name>"``), its subject (``"subject"``), its patch (``"patch"``) and what it
quotes of a message that is not in the evidence (``"quoted"``), in that order of
preference. A quote of a message in the evidence supports nothing: the original does,
under its own sender (:func:`pmsearch.shared.relevance.held`).

For the figures check each message gets, once and only when a sentence needs them, the
keys of the figures of its parts, its sender and its date (which a sentence may fairly
state: "Anna wrote on 29 November ..."). The unsupported-content check looks words up in
the same parts and sender, by stem (:meth:`Source.has_word`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pmsearch.services.verifier.corrections import corrected_by
from pmsearch.services.verifier.parts import WINDOW, Part, has_stem, has_whole_word, passage_of, short_norm, starts_word
from pmsearch.services.verifier.question import MONTHS
from pmsearch.shared import relevance
from pmsearch.shared.mail_parts import Kind, blank_except, quotes_where, split_mail
from pmsearch.shared.messages import EvidenceMessage, Excerpt
from pmsearch.shared.steering import blanked
from pmsearch.shared.text import align, amounts, figures
from pmsearch.shared.text.mail import own_text
from pmsearch.shared.text.normalize import normalize
from pmsearch.shared.text.words import in_english, stems_of

_WORD = re.compile(r"\w+")
# A forwarded message's header line inside a body, not a quoted reply's ("> From: ").
_FORWARDED_FROM = re.compile(r"^From: (.+)$", re.M)
_FORWARD_SUBJECT = re.compile(r"^\s*(?:(?:fwd?|wg|tr)\s*:\s*)+", re.I)
@dataclass(frozen=True, slots=True)
class Aligned:
    """The sentences of one message that carry a sentence (:mod:`pmsearch.shared.text.align`):
    the part they are in, the window of its units, and those units."""

    part: Part | None
    window: align.Window | None
    units: list[align.Unit]

    def excerpt(self, max_chars: int) -> Excerpt | None:
        """The aligned units as an excerpt of their part, verbatim; None when nothing was
        aligned (no word or figure in common) or the units are longer than ``max_chars``."""
        if self.part is None or self.window is None or not self.window.score:
            return None
        start, end = self.units[self.window.first].start, self.units[self.window.last].end
        if end - start > max_chars:
            return None
        return Excerpt(
            text=self.part.original[start:end], part=self.part.name, start=start, end=end, matched_quote=False,
            place=self.part.place(start),
        )

    @property
    def word_stems(self) -> frozenset[str]:
        """The stems of the aligned units' words; none when nothing was aligned."""
        if self.window is None or not self.window.score:
            return frozenset()
        return frozenset().union(*(unit.stems for unit in self.units[self.window.first : self.window.last + 1]))


@dataclass(slots=True)
class Source:
    message: EvidenceMessage
    parts: list[Part] = field(default_factory=list)
    _units: dict[int, list[align.Unit]] = field(default_factory=dict)
    _figure_keys: list[frozenset[figures.Key]] | None = None
    _sender: str | None = None
    _words: dict[str, bool] = field(default_factory=dict)
    _own: Part | None = None
    _english: bool | None = None
    _heading: frozenset[str] | None = None

    def has_figure(self, figure: figures.Figure) -> bool:
        """Whether the message's parts, sender or date support ``figure``.

        The parts' keys are read lazily, one part at a time: most figures are found in
        the body, and a later part is then never scanned.
        """
        if self._figure_keys is None:
            date = self.message.date
            meta = set(figures.source_keys(self.sender))
            if date is not None:
                meta.update(figures.date_keys(date.day, date.month, date.year))
            self._figure_keys = [frozenset(meta)]
        key_sets = self._figure_keys
        if figures.supported(figure, key_sets):
            return True
        while len(key_sets) <= len(self.parts):
            text = self.parts[len(key_sets) - 1].figure_text
            key_sets.append(figures.source_keys(text) | amounts.source_keys(text))
            if figures.supported(figure, key_sets):
                return True
        return False

    def rows_holding(self, figure: figures.Figure) -> list[frozenset[str]] | None:
        """The own words' stems of each table row that holds ``figure``, when only table
        rows of the message's attachments hold it; None when its prose, subject, sender
        or date does too (or nothing does). A figure of a table means something only in
        its row. Only an attachment's rows are records (a sheet's, a document's table, as
        ingest lays them out); a body's ``|`` lines are often an HTML mail's layout, whose
        "row" runs on into the sentence after it."""
        if self._figure_keys is None:
            self.has_figure(figure)
        if figures.supported(figure, [self._figure_keys[0]]):  # type: ignore[index] - the sender and date
            return None
        rows: list[frozenset[str]] = []
        for index, part in enumerate(self.parts):
            for unit in self._part_units(index, part):
                if figures.supported(figure, [unit.keys]):
                    if unit.row is None or not part.name.startswith("attachment:"):
                        return None
                    rows.append(unit.row)
        return rows or None

    def aligned(self, sentence_figures: list[figures.Figure], sentence_stems: frozenset[str]) -> Aligned:
        """The one or two sentences (or table rows) of the message's parts, its subject
        aside, that share the most figures and words with a sentence."""
        best: tuple[Part, align.Window, list[align.Unit]] | None = None
        for index, part in enumerate(self.parts):
            if part.name == "subject":
                continue
            text_units = self._part_units(index, part)
            window = align.best_window(text_units, sentence_figures, sentence_stems)
            if window is not None and (best is None or window.score > best[1].score):
                best = (part, window, text_units)
        if best is None:
            return Aligned(None, None, [])
        return Aligned(*best)

    def _part_units(self, index: int, part: Part) -> list[align.Unit]:
        text_units = self._units.get(index)
        if text_units is None:
            csv = part.name.casefold().endswith((".csv", ".tsv"))
            text_units = self._units[index] = align.units(part.original, table=csv)
        return text_units

    @property
    def sender(self) -> str:
        if self._sender is None:
            self._sender = short_norm(self.message.sender)
        return self._sender

    def has_word(self, word: str, word_stem: str) -> bool:
        """Whether a word of the message's parts or sender has the stem of ``word``.

        The same as ``word_stem in stems_of(tokens)`` over all those words, without
        tokenising and stemming the whole message: a literal whole-word occurrence is
        looked for first, then only the words that could have that stem.
        """
        known = self._words.get(word)
        if known is None:
            known = self._words[word] = self._holds(word, has_whole_word) or self._holds(
                word_stem, has_stem
            )
        return known

    @property
    def heading_stems(self) -> frozenset[str]:
        """The stems of the words of its sender and subject: who speaks and about what."""
        if self._heading is None:
            self._heading = stems_of(_WORD.findall(normalize(f"{self.message.sender} {self.message.subject}")))
        return self._heading

    def has_prefix(self, prefix: str) -> bool:
        """Whether a word of the message's parts or sender starts with ``prefix``."""
        return self._holds(prefix, starts_word)

    def states(self, word: str, word_stem: str) -> bool:
        """Whether the message says ``word`` in its own words: its body without the
        quoted parent, greeting and signature (the text passages show), an attachment
        or the subject; not merely in a sender's name or a sign-off ("Thanks, Priya")."""
        if self._own is None:
            self._own = Part("own", own_text(self.message.body))
        return any(
            has_whole_word(part.norm.text, word) or has_stem(part.norm.text, word_stem)
            for part in (self._own, *self.parts[1:])
        )

    @property
    def english(self) -> bool:
        """Whether the message's own words read as English (see :func:`in_english`)."""
        if self._english is None:
            self._english = in_english(own_text(self.message.body) or self.message.subject)
        return self._english

    def mentions(self, code: str) -> bool:
        """Whether a part or the subject names ``code`` (case-insensitively, as a word)."""
        needle = code.casefold()
        return any(has_whole_word(part.original.casefold(), needle) for part in self.parts)

    def names(self, name: str) -> bool:
        """Whether a part, the sender or a recipient names ``name`` (lower case) as a word."""
        headers = [self.message.sender, *self.message.recipients]
        return self.mentions(name) or any(has_whole_word(h.casefold(), name) for h in headers)

    def written_by(self, name: tuple[str, ...]) -> bool:
        """Whether the message is the words of ``name`` (lower-case words): its sender, or
        the sender of a message it forwards ("From: Tom Richter <tom@...>")."""
        forwarded = (p.author for p in split_mail(self.message.body).parts if p.kind is Kind.FORWARDED and p.author)
        headers = [self.message.sender, *forwarded]
        return any(all(has_whole_word(h.casefold(), word) for word in name) for h in headers)

    def in_month(self, month: str) -> bool:
        """Whether the message names ``month`` (full or abbreviated) or was sent in it."""
        date = self.message.date
        if date is not None and date.month == MONTHS.index(month) + 1:
            return True
        return self.mentions(month) or self.mentions(month[:3])

    def _holds(self, needle: str, test: Callable[[str, str], bool]) -> bool:
        # Lazily: a part is only normalised when the parts before it lack the word.
        for part in self.parts:
            if test(part.norm.text, needle):
                return True
        return test(self.sender, needle)

    @classmethod
    def of(cls, message: EvidenceMessage, unheld: Callable[[str], bool] = lambda _quote: False) -> Source:
        # Text written to steer a model supports nothing (see shared.steering). What a
        # reply quotes (and the line that introduces it), a diffstat and a list's footer
        # are not its sender's words: the quoted message supports what it says, when it
        # is evidence, and never the reply that copies it. A patch supports a sentence
        # about the code, after the prose. A quote whose original is not in the evidence
        # (``unheld``) is the only copy of what it says, and supports it last, as
        # "quoted": the passages showed it as quoted.
        body = blanked(message.body)
        parts = [Part("body", blank_except(body, Kind.OWN, Kind.SIGNATURE, Kind.FORWARDED))]
        parts.extend(Part(f"attachment:{a.name}", blanked(a.text)) for a in message.attachments)
        parts.append(Part("subject", message.subject))
        patch = blank_except(body, Kind.PATCH)
        if patch.strip():
            parts.append(Part("patch", patch))
        quoted = quotes_where(body, unheld)
        if quoted.strip():
            parts.append(Part("quoted", quoted))
        return cls(message, parts)

    def find_quote(self, fragments: list[str]) -> Excerpt | None:
        for part in self.parts:
            span = part.find(fragments)
            if span is not None:
                return part.excerpt(span[0], span[1], matched_quote=True)
        return None

    def best_passage(self, words: frozenset[str]) -> Excerpt:
        """The passage sharing the most distinct words with the sentence (earliest on ties).

        With no word in common, the start of the first non-empty part.
        """
        best: tuple[int, Part, int] | None = None
        if words:
            for part in self.parts:
                for first, window in part.windows:
                    score = len(words & window)
                    if score and (best is None or score > best[0]):
                        best = (score, part, first)
        if best is None:
            for part in self.parts:
                if part.tokens:
                    return passage_of(part, 0, 0)
            return Excerpt(text="", part="body", start=0, end=0, matched_quote=False)
        _, part, first = best
        tokens = part.tokens
        hits = [i for i in range(first, min(first + WINDOW, len(tokens))) if tokens[i] in words]
        return passage_of(part, hits[0], hits[-1])


class Sources:
    """Lazily prepared sources, keyed by message ID."""

    def __init__(self, evidence: Mapping[str, EvidenceMessage]) -> None:
        self._evidence = evidence
        self._ready: dict[str, Source] = {}
        self._corrections: dict[str, str] | None = None
        self._own_terms: dict[str, frozenset[str]] | None = None

    def __contains__(self, message_id: str) -> bool:
        return message_id in self._evidence

    def __getitem__(self, message_id: str) -> Source:
        source = self._ready.get(message_id)
        if source is None:
            message = self._evidence[message_id]
            source = self._ready[message_id] = Source.of(message, lambda quote: not self._held(quote, message_id))
        return source

    def _held(self, quote: str, message_id: str) -> bool:
        """Whether another evidence message says ``quote`` in its own words."""
        if self._own_terms is None:
            self._own_terms = relevance.own_terms({k: m.body for k, m in self._evidence.items()})
        others = (terms for k, terms in self._own_terms.items() if k != message_id)
        return relevance.held(relevance.terms(quote), others)

    def correction_of(self, message_id: str) -> str | None:
        """The evidence message that corrects ``message_id``, if its sender sent one
        (see :mod:`pmsearch.services.verifier.corrections`)."""
        if self._corrections is None:
            self._corrections = corrected_by(self._evidence)
        return self._corrections.get(message_id)

    def threads_of(self, message_ids: list[str], forwards: bool = False) -> list[Source]:
        """The cited messages, then the other evidence messages of their threads, and
        with ``forwards`` of the threads of messages that forward them.

        A reply need not repeat what its thread is about: "accepted" answers the Golf
        claim when the message it replies to is the Golf claim's.
        """
        threads = {self._evidence[m].thread_id for m in message_ids}
        if forwards:
            threads |= {m.thread_id for m in self._evidence.values() if self._forwards(m, message_ids)}
        rest = [k for k, m in self._evidence.items() if m.thread_id in threads and k not in message_ids]
        return [self[k] for k in [*message_ids, *rest]]

    def _forwards(self, message: EvidenceMessage, message_ids: list[str]) -> bool:
        """Whether ``message`` forwards one of ``message_ids``: its subject is theirs
        after "Fwd:" and the forwarded header names their sender. A forward starts a new
        thread, yet who is asked there ("Frank, which option do you prefer?", "24
        months, please") is asked about the forwarded offer."""
        if not _FORWARD_SUBJECT.match(message.subject):
            return False
        subject = _FORWARD_SUBJECT.sub("", message.subject).strip().casefold()
        senders = [h.casefold() for h in _FORWARDED_FROM.findall(message.body)]
        for k in message_ids:
            cited = self._evidence[k]
            address = cited.sender.rpartition("<")[2].rstrip(">").strip().casefold()
            if k != message.message_id and cited.subject.strip().casefold() == subject and any(
                address in h for h in senders
            ):
                return True
        return False
