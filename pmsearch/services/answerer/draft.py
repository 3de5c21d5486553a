"""The written answer as a cited draft: the sentences that answer the question
(:mod:`.padding`), each with its sources, then what code adds word for word from the
mail: the answer's source's sentence holding the details the answer leaves out
(:mod:`.details`), another message's sentence answering a part of the question the
answer leaves out whole (:mod:`.left_out`), and what other messages state differently
(another date of the meeting, another amount of the invoice; :mod:`.disagreement`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pmsearch.services.answerer.attribution import attribute, echoes_header
from pmsearch.services.answerer.details import with_details
from pmsearch.services.answerer.disagreement import with_other_statements
from pmsearch.services.answerer.fallback import with_fallbacks
from pmsearch.services.answerer.left_out import with_left_out
from pmsearch.services.answerer.padding import answering
from pmsearch.shared.messages import AnswerStyle, Draft, DraftSentence, EvidenceMessage


@dataclass
class Cited:
    draft: Draft
    notes: list[str] = field(default_factory=list)  # what was dropped or added, for the step's trace
    by_model: list[str] = field(default_factory=list)  # message ids the model cited
    by_code: list[str] = field(default_factory=list)  # message ids code attributed


def cite(
    question: str, written: list[DraftSentence], evidence: list[EvidenceMessage],
    citation_source: Literal["code", "model"] = "code", style: AnswerStyle = "write",
) -> Cited:
    """The draft of ``written``, each sentence citing the sources code attributes it to
    (``citation_source="code"``; the embedded model writes the right sentence but cites
    the wrong passages) or those the model gave; both choices are recorded. In the
    ``write_or_extract`` style each carries the mail's sentence it was made from
    (:mod:`.fallback`)."""
    kept, repeated = answering(question, written)
    out = Cited(draft=Draft(sentences=[]))
    if len(kept) + repeated < len(written):
        out.notes.append(f"dropped {len(written) - len(kept) - repeated} sentence(s) that do not address the question")
    sentences = []
    by_id = {m.message_id: m for m in evidence}
    for s in kept:
        by_code = attribute(s.text, evidence, preferred=s.citations)
        if by_code and echoes_header(s.text, by_id[by_code[0]]):
            out.notes.append("dropped a sentence that only repeats a message's header")
            continue
        if not sentences:
            s = s.model_copy(update={"follows": None})  # an echoed header was no answer: this one is
        out.by_model += [m for m in s.citations if m not in out.by_model]
        out.by_code += [m for m in by_code if m not in out.by_code]
        # A sentence no evidence message shares anything with (a template echo, an
        # invention) gets no citation by code, and the verifier removes it.
        chosen = by_code if citation_source == "code" else s.citations
        sentences.append(s.model_copy(update={"citations": chosen}))
    if style == "write_or_extract":
        sentences = with_fallbacks(sentences, evidence)
    out.draft = Draft(sentences=completed(question, sentences, evidence, out.notes), style=style)
    return out


def extracted(question: str, chosen: list[DraftSentence], evidence: list[EvidenceMessage]) -> Cited:
    """The draft of an extract-style answer: the chosen sentences as they are (the mail's
    own words, cited to their messages), completed as a written answer is."""
    out = Cited(draft=Draft(sentences=[], style="extract"))
    out.by_code = list(dict.fromkeys(m for s in chosen for m in s.citations))
    out.draft = Draft(sentences=completed(question, chosen, evidence, out.notes), style="extract")
    return out


def completed(
    question: str, sentences: list[DraftSentence], evidence: list[EvidenceMessage], notes: list[str]
) -> list[DraftSentence]:
    """``sentences`` with what code adds word for word from the mail (see the module),
    each addition said in ``notes``."""
    detailed = with_details(question, sentences, evidence)
    whole = with_left_out(question, detailed, evidence)
    out = with_other_statements(question, whole, evidence)
    if len(detailed) > len(sentences):
        notes.append(f"added {len(detailed) - len(sentences)} sentence(s) of the answer's source with its details")
    if len(whole) > len(detailed):
        notes.append("added a sentence of another message for the part of the question the answer leaves out")
    disagreeing = [s for s in out if s not in whole]
    if disagreeing:
        notes.append(f"added {len(disagreeing)} statement(s) the answer disagrees with")
    return out
