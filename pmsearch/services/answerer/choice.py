"""An extract-style answer: the sentences the model chose, as statements of the mail.

The model chose labels; code made them the mail's sentences (:mod:`pmsearch.shared.extracts`),
and here each run of chosen sentences of one message part becomes one statement, word for
word with who wrote it and when (:func:`.statements.chosen_statement`), cited to its message. No
sentence is written by the model, so none is padded, attributed or completed: the
verifier checks each like any quote, and the question's rules still apply.
"""

from __future__ import annotations

from pmsearch.services.answerer.statements import chosen_statement
from pmsearch.shared.messages import ChosenSentence, DraftSentence, EvidenceMessage


def chosen_statements(chosen: list[ChosenSentence], evidence: list[EvidenceMessage]) -> list[DraftSentence]:
    """The statements of ``chosen`` (in the order shown), neighbours of one message part
    joined; a sentence of a message not in the run's evidence is left out."""
    by_id = {m.message_id: m for m in evidence}
    runs: list[tuple[str, str, list[str]]] = []
    for s in chosen:
        if s.message_id not in by_id:
            continue
        if runs and runs[-1][:2] == (s.message_id, s.part):
            runs[-1][2].append(s.text)
        else:
            runs.append((s.message_id, s.part, [s.text]))
    return [chosen_statement(by_id[mid], part, texts) for mid, part, texts in runs]
