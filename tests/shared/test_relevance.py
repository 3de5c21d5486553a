"""The reader of passages: which of the question's words can pick a sentence out, and how
much each says among the sentences at hand."""

from __future__ import annotations

from pmsearch.shared import relevance


def test_function_words_of_english_french_and_german_weigh_nothing():
    assert relevance.terms("What did the insurer say about the claim?") == {"insur", "claim"}
    assert relevance.terms("Pour quels identifiants le support est-il là ?") == {"suppo", "ident"}
    assert relevance.terms("Welche Datenbank hat er für den Server genommen?") == {"daten", "serve", "genom"}


def test_a_code_is_one_word_besides_its_pieces_being_none():
    assert relevance.terms("Was INV-2024-0173 paid?") == {"inv-2024-0173", "paid"}


def test_a_word_found_in_fewer_sentences_weighs_more():
    units = [relevance.terms(t) for t in ("Vitam support recette", "Vitam support", "Vitam version", "téléphone 01 86")]
    weights = relevance.Weights.of("téléphone du support Vitam", units)
    assert weights.weight["télép"] > weights.weight["suppo"] > weights.weight["vitam"]


def test_an_asked_code_outweighs_a_word_as_rare():
    units = [relevance.terms(t) for t in ("INV-2024-0173 chairs", "chairs paid")]
    weights = relevance.Weights.of("Was INV-2024-0173 for the chairs paid?", units)
    assert weights.weight["inv-2024-0173"] == relevance.CODE_WEIGHT * weights.weight["paid"]


def test_weights_without_a_senders_name_score_nothing_for_it():
    weights = relevance.Weights.of("What did Jeff King say about getpass?", [relevance.terms("getpass Jeff King")])
    less = weights.without(relevance.terms("Jeff King <peff@peff.net>"))
    assert less.score(relevance.terms("Signed-off-by: Jeff King")) == 0
    assert less.score(relevance.terms("getpass is a fallback")) == weights.score(relevance.terms("getpass is a fallback"))


def test_a_quote_is_held_when_another_messages_own_words_hold_most_of_it():
    quote = relevance.terms("We have accepted the Golf claim and pay EUR 2,115.50 on Friday.")
    original = relevance.terms("Dear Ms Weber, we have accepted the Golf claim and pay EUR 2,115.50 on Friday. Regards")
    other = relevance.terms("The Golf goes to the garage on Friday.")
    assert relevance.held(quote, [other, original])
    assert not relevance.held(quote, [other])
