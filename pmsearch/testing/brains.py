"""Scripts for the scripted model: small functions that read a request the way a model
would (the passages, the question, the reply schema) and reply, honestly or not, on
purpose.

A request shows the evidence as numbered passages in one fenced block::

    CODE for this request: <marker>

    Evidence passages:
    <<<UNTRUSTED evidence <marker>>>
    P1 | 2024-04-03 Wed | Sabine Roth | Re: Claim CLM-2024-55817 | thread T1: 3 of 4
    <the passage text>

    P2 | ...
    <<<END_UNTRUSTED <marker>>>

    Question: ...

A model names passages by ref ("P1") and threads by ref ("T1"); it never sees a message
id, so brains reply with refs. Three reply schemas exist: ``PlannerAnswer`` (the
planner's answer attempt: ``answer``), ``PlannerSearch`` (the planner's search round,
asked only after an attempt found no answer: ``searches``) and ``AnswerDraft`` (the
answerer's call: ``answer``, the same shape as an attempt).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmsearch.testing.scripted_model import Reply

ATTEMPT = "PlannerAnswer"
SEARCH = "PlannerSearch"
DRAFT = "AnswerDraft"

QUESTION = re.compile(r"^Question: (.*)$", re.M)
CODE = re.compile(r"^CODE for this request: (\S+)$", re.M)
LABEL = re.compile(r"^(P\d+) \| (.*)$", re.M)
THREAD = re.compile(r"\| thread (T\d+): (\d+) of (\d+)(, latest found)?$")
_PLAIN = re.compile(r"[A-Za-z][A-Za-z']*")


# ---------------------------------------------------------------- reading a request


@dataclass(frozen=True)
class Shown:
    """One passage as the request shows it."""

    ref: str  # "P1"
    label: str  # the label line after "P1 | "
    text: str

    @property
    def thread(self) -> str:
        m = THREAD.search(self.label)
        return m.group(1) if m else ""

    @property
    def place(self) -> int:
        """The message's place in its thread (1 is the oldest found)."""
        m = THREAD.search(self.label)
        return int(m.group(2)) if m else 0

    @property
    def sender(self) -> str:
        parts = self.label.split(" | ")
        return parts[1] if len(parts) > 1 else ""


def schema(body: dict[str, Any]) -> dict[str, Any]:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}


def schema_title(body: dict[str, Any]) -> str:
    return schema(body).get("title", "")


def passage_refs_allowed(body: dict[str, Any]) -> list[str]:
    """The passage refs the reply schema allows (its enum, or its const for one)."""
    items = schema(body).get("$defs", {}).get("AnswerSentence", {}).get("properties", {}).get("passages", {}).get("items", {})
    if "const" in items:
        return [items["const"]]
    return list(items.get("enum", []))


def user_text(body: dict[str, Any]) -> str:
    """The first user turn: the request itself (a repair round appends more turns)."""
    users = [str(m.get("content", "")) for m in body["messages"] if m["role"] == "user"]
    return users[0] if users else ""


def is_repair(body: dict[str, Any]) -> bool:
    """The client's second try, after a reply that did not validate."""
    return any(m["role"] == "assistant" for m in body["messages"])


def question(body: dict[str, Any]) -> str:
    """The question, read after the evidence block (a mail may hold a "Question:" line)."""
    text = user_text(body)
    end = f"<<<END_UNTRUSTED {code(body)}>>>"
    m = QUESTION.search(text.split(end, 1)[-1])
    return m.group(1).strip() if m else ""


def code(body: dict[str, Any]) -> str:
    m = CODE.search(user_text(body))
    return m.group(1) if m else ""


def evidence_block(body: dict[str, Any]) -> str:
    """The text between the request's fence lines, or "" when no evidence was shown."""
    marker = code(body)
    text = user_text(body)
    begin, end = f"<<<UNTRUSTED evidence {marker}>>>\n", f"\n<<<END_UNTRUSTED {marker}>>>"
    if not marker or begin not in text:
        return ""
    return text.split(begin, 1)[1].split(end, 1)[0]


def passages(body: dict[str, Any]) -> list[Shown]:
    """Each passage of the request: its ref, its label line and its text."""
    block = evidence_block(body)
    labels = list(LABEL.finditer(block))
    out = []
    for i, m in enumerate(labels):
        end = labels[i + 1].start() if i + 1 < len(labels) else len(block)
        out.append(Shown(m.group(1), m.group(2), block[m.end() : end].strip()))
    return out


def phrase(text: str, words: int = 6) -> str:
    """The longest run (up to ``words``) of plain, consecutive words on one line of
    ``text``: something a sentence can quote exactly."""
    best: list[str] = []
    for line in text.splitlines():
        run: list[str] = []
        for token in line.split():
            if _PLAIN.fullmatch(token):
                run.append(token)
                if len(run) > len(best):
                    best = run[:words]
                if len(best) == words:
                    return " ".join(best)
            else:
                run = []
    return " ".join(best)


def quoting(passage: Shown) -> str:
    """A sentence (at least 24 characters) quoting a phrase of ``passage``."""
    return f'The mail says "{phrase(passage.text)}".'


# ---------------------------------------------------------------- writing a reply


def sentence(text: str, *refs: str) -> dict[str, Any]:
    return {"text": text, "passages": list(refs)}


def search(query: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": "search", "arguments": {"query": query, **arguments}}


def read_thread(thread_ref: str) -> dict[str, Any]:
    return {"tool": "read_thread", "arguments": {"thread_id": thread_ref}}


def answer(*sentences: dict[str, Any]) -> Reply:
    """A ``PlannerAnswer`` or ``AnswerDraft``; empty says the passages do not answer."""
    return Reply(object={"answer": list(sentences)})


def searches(*calls: dict[str, Any]) -> Reply:
    """A ``PlannerSearch``; empty says no search can help."""
    return Reply(object={"searches": list(calls)})


def choose(*labels: str) -> Reply:
    """A ``PlannerChoice`` or ``AnswerChoice`` (extract style): the labels of the
    sentences chosen; empty says none answers."""
    return Reply(object={"sentences": list(labels)})


def nothing(body: dict[str, Any]) -> Reply:
    """The empty reply of whichever schema the request asks for."""
    if schema_title(body) == SEARCH:
        return searches()
    return choose() if schema_title(body).endswith("Choice") else answer()


def honest_answer(body: dict[str, Any]) -> list[dict[str, Any]]:
    """One sentence quoting the first passage and citing it; none without passages."""
    shown = passages(body)
    return [sentence(quoting(shown[0]), shown[0].ref)] if shown else []


def honest(search_query: Callable[[str], str] | None = None) -> Callable[[dict], Reply]:
    """Answer at once from the first passage, in an attempt and in an answer call alike.
    With ``search_query``, the first attempt finds no answer and the search round asks
    for the query it makes of the question; the next attempt answers."""

    def reply(body: dict) -> Reply:
        title = schema_title(body)
        if title == SEARCH:
            return searches(search(search_query(question(body)))) if search_query else searches()
        if title == ATTEMPT and search_query and "Searched so far:" not in user_text(body):
            return answer()
        return answer(*honest_answer(body))

    return reply


def knowing(answers: dict[str, tuple[str, ...]]) -> Callable[[dict], Reply]:
    """A model that reads well: for a question of ``answers``, it quotes, from the first
    passage that holds all of that question's key words, the words around each of them
    (so a right answer states them), citing that passage; shown no such passage, or
    asked another question, it finds no answer. It never asks for a search."""

    def reply(body: dict) -> Reply:
        if schema_title(body) == SEARCH:
            return searches()
        keys = answers.get(question(body), ())
        for shown in passages(body):
            if keys and all(k.casefold() in shown.text.casefold() for k in keys):
                quotes = "; ".join(f'"{around(shown.text, k)}"' for k in keys)
                return answer(sentence(f"The mail says {quotes}.", shown.ref))
        return answer()

    return reply


def around(text: str, key: str, words: int = 4) -> str:
    """``key`` with up to ``words`` words either side of it, on its line, word for word."""
    for line in text.splitlines():
        at = line.casefold().find(key.casefold())
        if at >= 0:
            starts = [m.start() for m in re.finditer(r"\S+", line[:at])][-words:]
            ends = [m.end() for m in re.finditer(r"\S+", line[at + len(key):])][:words]
            start = starts[0] if starts else at
            end = at + len(key) + (ends[-1] if ends else 0)
            return line[start:end].rstrip(".,;:")
    raise ValueError(f"{key!r} is not in the passage")


def of_kind(bodies: list[dict[str, Any]], title: str) -> list[dict[str, Any]]:
    """The requests asking for ``title``'s schema."""
    return [b for b in bodies if schema_title(b) == title]
