"""The written answer as a cited draft (services/answerer/draft.py), without a model or
a store: padding dropped, sources chosen, both choices and every change recorded."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.services.answerer.draft import cite
from pmsearch.shared.messages import DraftSentence, EvidenceMessage

QUESTION = "Did the insurer accept the Golf claim?"


def msg(mid: str, body: str, day: int) -> EvidenceMessage:
    return EvidenceMessage(message_id=mid, tenant_id="acme", thread_id="t-golf", mailbox="alice", sender="Sabine Roth",
                           date=datetime(2024, 3, day, tzinfo=UTC), subject="Claim CLM-2024-55817", body=body)


PHOTOS = msg("m-photos", "Attached are three photos of the damage to the VW Golf, taken this morning.", 13)
ACCEPT = msg("m-accept", "Northwind accepts the Golf claim.", 28)
FLIGHT = msg("m-flight", "Your flight to Hamburg leaves at 07:40 from gate B12.", 29)


def test_code_cites_the_source_and_the_models_choice_is_recorded_beside_it():
    cited = cite(QUESTION, [DraftSentence(text="Northwind accepts the Golf claim.", citations=["m-photos"])],
                 [PHOTOS, ACCEPT])
    assert [s.citations for s in cited.draft.sentences] == [["m-accept"]]
    assert (cited.by_model, cited.by_code) == (["m-photos"], ["m-accept"])


def test_the_models_own_citations_are_kept_when_set_so():
    cited = cite(QUESTION, [DraftSentence(text="Northwind accepts the Golf claim.", citations=["m-photos"])],
                 [PHOTOS, ACCEPT], citation_source="model")
    assert [s.citations for s in cited.draft.sentences] == [["m-photos"]]


def test_a_padding_sentence_is_dropped_and_said_so():
    written = [DraftSentence(text="Northwind accepts the Golf claim.", citations=["m-accept"]),
               DraftSentence(text="Your flight to Hamburg leaves at 07:40 from gate B12.", citations=["m-flight"])]
    cited = cite(QUESTION, written, [PHOTOS, ACCEPT, FLIGHT])
    assert [s.text for s in cited.draft.sentences] == ["Northwind accepts the Golf claim."]
    assert cited.notes == ["dropped 1 sentence(s) that do not address the question"]


TRAINING = "What is the new expense app called and when is the training?"
APP = msg("m-app", "The new expense app is called Spendly. The training is on 16 May at 10:00.", 20)


def test_every_later_sentence_kept_rests_on_the_answer():
    for question, written, evidence in (
        (TRAINING, [DraftSentence(text="The new expense app is called Spendly.", citations=["m-app"]),
                    DraftSentence(text="The training is on 16 May at 10:00.", citations=["m-app"])], [APP]),
        (QUESTION, [DraftSentence(text="Northwind accepts the Golf claim.", citations=["m-accept"]),
                    DraftSentence(text="Before that the insurer had the photos of the Golf claim.", citations=["m-photos"])],
         [PHOTOS, ACCEPT]),
    ):
        cited = cite(question, written, evidence)
        assert [(s.follows, s.completes) for s in cited.draft.sentences][:2] == [(None, None), (0, None)]


def test_after_an_echoed_header_the_next_sentence_is_the_answer():
    header = msg("m-header", "Please find the schedule below.", 21).model_copy(
        update={"subject": "New expense app Spendly: training dates"})
    written = [DraftSentence(text="New expense app Spendly: training dates.", citations=["m-header"]),
               DraftSentence(text="The training is on 16 May at 10:00.", citations=["m-app"])]
    cited = cite(TRAINING, written, [header, APP])
    assert [(s.text, s.follows) for s in cited.draft.sentences][:1] == [("The training is on 16 May at 10:00.", None)]
