"""The labelled question set: load a YAML list, validate it, resolve its keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

Kind = Literal["answerable", "unanswerable", "other_mailbox", "other_tenant", "injected"]
KINDS: tuple[str, ...] = Kind.__args__  # type: ignore[attr-defined]


class EvalInputError(ValueError):
    """Bad input to the evaluation; its message is one readable line."""


class Question(BaseModel):
    """One labelled question. ``facts`` is a list of facts, each a list of acceptable spellings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    key: str
    kind: Kind
    question: str = Field(min_length=1)
    facts: list[list[str]] = Field(default_factory=list)
    supporting: list[str] = Field(default_factory=list)
    never: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    note: str | None = None
    # pmsearch ids of the supporting messages, found in the corpus by resolve_supporting.
    _resolved: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @field_validator("facts", mode="before")
    @classmethod
    def _facts(cls, value):
        # A fact with one spelling may be written as a plain string.
        if isinstance(value, list):
            return [[item] if isinstance(item, str) else item for item in value]
        return value

    @field_validator("facts")
    @classmethod
    def _facts_not_blank(cls, value: list[list[str]]) -> list[list[str]]:
        for fact in value:
            if not fact or any(not s.strip() for s in fact):
                raise ValueError("every fact needs at least one non-blank spelling")
        return value

    @field_validator("key")
    @classmethod
    def _label(cls, value: str) -> str:
        tenant, _, user = value.partition("/")
        if not tenant or not user or "/" in user or value != value.strip():
            raise ValueError(f"expected a key label like acme/alice, got {value!r}")
        return value

    @field_validator("supporting")
    @classmethod
    def _bare_ids(cls, value: list[str]) -> list[str]:
        # Message-IDs are stored without angle brackets; accept them pasted with.
        return [v.strip().strip("<>").strip() for v in value]

    @model_validator(mode="after")
    def _kind_matches_facts(self) -> Question:
        if self.kind == "answerable" and not self.facts:
            raise ValueError("an answerable question needs facts")
        if self.kind in ("unanswerable", "other_mailbox", "other_tenant") and self.facts:
            raise ValueError(f"a question of kind {self.kind} must not have facts")
        return self

    @property
    def tenant(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def answerable(self) -> bool:
        """Should be answered: kind answerable, or injected with facts."""
        return bool(self.facts)

    def supporting_ids(self) -> frozenset[str]:
        """The supporting messages as pmsearch's public message ids: each copy's id as
        the corpus gives it (a message id includes a digest of its content, see
        :func:`resolve_supporting`), and the id an index of schema 1 gave the Message-ID
        (which a migrated index keeps)."""
        from pmsearch.services.searcher.ingest.schemas import legacy_message_key

        return frozenset(legacy_message_key(self.tenant, rfc_id) for rfc_id in self.supporting) | self._resolved


def corpus_message_ids(demo_dir: Path) -> dict[tuple[str, str], frozenset[str]]:
    """(tenant, Message-ID) -> the pmsearch ids of its copies in a corpus laid out as
    ``<tenant>/<mailbox>/<folder>/`` (the demo mailbox)."""
    from pmsearch.services.searcher.ingest.identity import content_digest
    from pmsearch.services.searcher.ingest.parser import parse_message
    from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
    from pmsearch.services.searcher.ingest.schemas import message_key

    found: dict[tuple[str, str], set[str]] = {}
    for tenant, _mailbox, path in demo_mailboxes(demo_dir):
        for item in read_path(path):
            rfc_id = parse_message(item.raw, folder=item.folder).rfc_message_id
            found.setdefault((tenant, rfc_id), set()).add(message_key(tenant, rfc_id, content_digest(item.raw)))
    return {k: frozenset(v) for k, v in found.items()}


def resolve_supporting(questions: Iterable[Question], ids: Mapping[tuple[str, str], Iterable[str]]) -> None:
    """Give each question the ids of its supporting messages' copies in ``ids``."""
    for q in questions:
        q._resolved = frozenset(i for rfc_id in q.supporting for i in ids.get((q.tenant, rfc_id), ()))


def _first_error(exc: ValidationError) -> str:
    e = exc.errors()[0]
    field = ".".join(str(p) for p in e["loc"])
    if e["type"] == "extra_forbidden":
        return f"unknown field {field!r}"
    if e["type"] == "missing":
        return f"missing field {field!r}"
    message = e["msg"].removeprefix("Value error, ")
    return f"{field}: {message}" if field else message


def parse_questions(data: object, source: str) -> list[Question]:
    """Validate parsed YAML; raise EvalInputError naming the first bad question and field."""
    if not isinstance(data, list) or not data:
        raise EvalInputError(f"{source}: expected a non-empty YAML list of questions")
    questions: list[Question] = []
    seen: set[str] = set()
    for n, item in enumerate(data, 1):
        label = f"question {n}" + (f" ({item['id']})" if isinstance(item, dict) and item.get("id") else "")
        if not isinstance(item, dict):
            raise EvalInputError(f"{source}: {label}: expected a mapping, got {type(item).__name__}")
        try:
            q = Question.model_validate(item)
        except ValidationError as exc:
            raise EvalInputError(f"{source}: {label}: {_first_error(exc)}") from None
        if q.id in seen:
            raise EvalInputError(f"{source}: {label}: duplicate id {q.id!r}")
        seen.add(q.id)
        questions.append(q)
    return questions


def load_questions(path: Path) -> list[Question]:
    """Read and validate a question set file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalInputError(f"no question set at {path}") from None
    except OSError as exc:
        raise EvalInputError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise EvalInputError(f"{path}: invalid YAML{at}: {problem}") from None
    return parse_questions(data, str(path))


def select(questions: list[Question], only: list[str], kinds: list[str], limit: int | None) -> list[Question]:
    """The questions to run, in file order: by id, by kind, then the first ``limit``."""
    unknown_kinds = sorted(set(kinds) - set(KINDS))
    if unknown_kinds:
        raise EvalInputError(f"unknown kind {', '.join(unknown_kinds)} (kinds: {', '.join(KINDS)})")
    ids = {q.id for q in questions}
    unknown_ids = [i for i in only if i not in ids]
    if unknown_ids:
        raise EvalInputError(f"no question with id {', '.join(unknown_ids)} in the set")
    chosen = [q for q in questions if (not only or q.id in only) and (not kinds or q.kind in kinds)]
    if limit is not None:
        chosen = chosen[:limit]
    if not chosen:
        raise EvalInputError("no question matches --only/--kinds/--limit")
    return chosen


def resolve_keys(questions: list[Question], keys_file: Path) -> dict[str, str]:
    """API key per label used by ``questions``, from a ``{label: key}`` JSON file."""
    try:
        keys = json.loads(keys_file.read_text())
    except FileNotFoundError:
        raise EvalInputError(f"no keys file at {keys_file}: run `pmsearch up` or pass --keys or --start") from None
    except ValueError as exc:
        raise EvalInputError(f"{keys_file}: not JSON ({exc})") from None
    if not isinstance(keys, dict):
        raise EvalInputError(f"{keys_file}: expected a JSON object of label -> key")
    for q in questions:
        if q.key not in keys:
            known = ", ".join(sorted(keys)) or "none"
            raise EvalInputError(f"question {q.id}: unknown key label {q.key!r} (known in {keys_file}: {known})")
    return {q.key: keys[q.key] for q in questions}
