"""``pmsearch eval`` end to end: load the set, (optionally) start the stack, ask every
question, score, print and write the reports, check the gates."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Iterator

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pmsearch.cli.client import admin_token_if_any
from pmsearch.cli.evaluation import report, scoring
from pmsearch.cli.evaluation.corpus import corpus_keys, set_corpus
from pmsearch.cli.evaluation.drafts import DraftKeeper
from pmsearch.cli.evaluation.questions import (
    EvalInputError,
    Question,
    corpus_message_ids,
    load_questions,
    resolve_keys,
    resolve_supporting,
    select,
)
from pmsearch.cli.evaluation.runner import RunRecord, run_all
from pmsearch.shared.settings import CliSettings


@dataclass
class EvalOptions:
    set_path: Path
    gateway: str | None = None
    keys: Path | None = None
    only: list[str] | None = None
    kinds: list[str] | None = None
    limit: int | None = None
    baseline: bool = False
    out: Path | None = None
    timeout: float = 300.0
    concurrency: int = 1
    start: bool = False
    min_precision: float | None = None
    max_wrongly_answered: int | None = None
    min_answered_right: float | None = None


def split_csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def question_ids(value: str | None) -> list[str]:
    """``--only``: ids separated by commas, or ``@file`` naming a file of ids (commas or
    one per line; ``#`` starts a comment), such as ``evals/quick.txt``."""
    if not value or not value.startswith("@"):
        return split_csv(value)
    path = Path(value[1:])
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalInputError(f"--only {value}: cannot read {path} ({exc.strerror or exc})") from None
    lines = (line.split("#", 1)[0] for line in text.splitlines())
    return [i for line in lines for i in split_csv(line)]


@contextlib.contextmanager
def eval_target(opts: EvalOptions, settings: CliSettings, err: Console) -> Iterator[tuple[str, Path]]:
    """(gateway URL, keys file): a running stack's, or one started here the way ``up`` does.

    A set that brings its own mail (``mail/`` beside it) is asked of a stack started here,
    loaded with that mail and one key per mailbox, or of a running stack that holds it
    when ``--keys`` names that stack's keys for it."""
    corpus = set_corpus(opts.set_path)
    if not opts.start:
        if corpus is not None and opts.keys is None:
            raise EvalInputError(
                f"{opts.set_path} brings its own mail ({corpus}): run it with --start, or with --keys of a stack that holds it"
            )
        yield opts.gateway or settings.gateway_url, opts.keys or settings.var_dir / "demo-keys.json"
        return
    from pmsearch.cli.demo import load_demo, load_mailboxes
    from pmsearch.cli.main import local_stack

    stack = local_stack(settings)
    try:
        err.print(f"starting pmsearch in {settings.var_dir}/ (logs in {stack.log_dir}/)")
        try:
            stack.start()
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(str(exc).splitlines()[0] + f" (logs in {stack.log_dir}/)") from None
        if corpus is None:
            load_demo(stack, settings.demo_dir, err)
            yield stack.gateway_url, opts.keys or stack.var_dir / "demo-keys.json"
        else:
            keys_file = stack.var_dir / f"eval-keys-{opts.set_path.parent.name}.json"
            load_mailboxes(stack, corpus, corpus_keys(corpus), keys_file, err)
            yield stack.gateway_url, keys_file
    finally:
        stack.stop()


def _ask(
    gateway: str, questions: list[Question], keys: dict[str, str], opts: EvalOptions, err: Console, keeper: DraftKeeper,
    out_dir: Path,
) -> list[RunRecord]:
    strategies = ("loop", "single_shot") if opts.baseline else ("loop",)
    by_id = {q.id: q for q in questions}
    tally = {s: [0, 0] for s in strategies}  # answered right, answerable done

    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=False,
    ) as progress:
        task = progress.add_task("asking", total=len(questions) * len(strategies))

        out_dir.mkdir(parents=True, exist_ok=True)
        partial = out_dir / "runs.jsonl"

        def done(record: RunRecord) -> None:
            q = by_id[record.question_id]
            keeper.keep(record.run_id)
            # Each run as it ends: an evaluation cut short (hours on two cores) keeps
            # what it asked.
            with partial.open("a", encoding="utf-8") as f:
                f.write(json.dumps(report.question_row(q, record), default=str) + "\n")
            if q.answerable:
                tally[record.strategy][1] += 1
                tally[record.strategy][0] += scoring.answered_right(q, record.result)
            right = ", ".join(f"{s} right {r}/{n}" for s, (r, n) in tally.items())
            progress.update(task, advance=1, description=f"asking ({right})")

        return asyncio.run(
            run_all(gateway, questions, keys, strategies, opts.concurrency, opts.timeout, on_record=done)
        )


class GatewayUnreachable(EvalInputError):
    """Nothing answers at the gateway URL (the CLI's exit code 3)."""


def _reachable(gateway: str) -> None:
    """Refuse early when nothing listens: otherwise every question would be an ``error``."""
    try:
        httpx.get(f"{gateway}/healthz", timeout=10)
    except httpx.HTTPError as exc:
        raise GatewayUnreachable(f"cannot reach the gateway at {gateway}: {exc}") from None


def check_caps(gateway: str, settings: CliSettings, questions: list[Question], runs_per_question: int) -> None:
    """Refuse before asking when a tenant's daily cap cannot take the evaluation's runs:
    otherwise the questions past the cap end as 429 errors and the figures mean nothing.
    Skipped without the admin token (the usage is an admin route)."""
    token = admin_token_if_any(settings)
    if token is None:
        return
    needed: dict[str, int] = {}
    for q in questions:
        tenant = q.key.split("/", 1)[0]
        needed[tenant] = needed.get(tenant, 0) + runs_per_question
    for tenant, runs in sorted(needed.items()):
        try:
            resp = httpx.get(
                f"{gateway}/v1/admin/tenants/{tenant}/usage", headers={"Authorization": f"Bearer {token}"}, timeout=10
            )
        except httpx.HTTPError:
            return  # the question runs will say what is wrong
        if resp.status_code != 200:
            return
        remaining = resp.json().get("remaining")
        if isinstance(remaining, int) and remaining < runs:
            raise EvalInputError(
                f"tenant {tenant} has {remaining} agentic runs left today and this evaluation needs {runs}: "
                f"raise its cap (pmsearch tenants set {tenant} --daily-cap N) or ask fewer questions"
            )


def gate_failures(opts: EvalOptions, summary: dict) -> list[str]:
    """The quality gates ``summary`` misses. An undefined figure (nothing to measure) passes."""
    failed = []
    precision, right = summary["citation_precision"], summary["answered_right"]
    if opts.min_precision is not None and precision is not None and precision < opts.min_precision:
        failed.append(f"citation_precision {precision:.3f} < {opts.min_precision:g}")
    if opts.max_wrongly_answered is not None and summary["wrongly_answered"] > opts.max_wrongly_answered:
        failed.append(f"wrongly_answered {summary['wrongly_answered']} > {opts.max_wrongly_answered}")
    if opts.min_answered_right is not None and right is not None and right < opts.min_answered_right:
        failed.append(f"answered_right {right:.3f} < {opts.min_answered_right:g}")
    return failed


def run_eval(opts: EvalOptions, settings: CliSettings, out: Console, err: Console) -> list[str]:
    """Run the evaluation and write its reports; returns the failed gates (empty: all passed).

    Raises EvalInputError for bad input, before anything is asked."""
    questions = select(load_questions(opts.set_path), opts.only or [], opts.kinds or [], opts.limit)
    if opts.concurrency < 1 or opts.timeout <= 0:
        raise EvalInputError("--concurrency must be at least 1 and --timeout positive")
    if opts.start and opts.gateway:
        raise EvalInputError("--start runs its own stack; leave out --gateway")
    corpus = set_corpus(opts.set_path) or settings.demo_dir
    if corpus.is_dir():
        resolve_supporting(questions, corpus_message_ids(corpus))
    else:
        err.print(f"no demo mailbox at {settings.demo_dir}: citations are matched by schema-1 message ids only",
                  highlight=False, markup=False)
    started = datetime.now(UTC)
    out_dir = (opts.out or settings.var_dir / "eval") / started.strftime("%Y%m%dT%H%M%SZ")
    with eval_target(opts, settings, err) as (gateway, keys_file):
        keys = resolve_keys(questions, keys_file)
        _reachable(gateway)
        check_caps(gateway, settings, questions, 2 if opts.baseline else 1)
        keeper = DraftKeeper.for_local_stack(settings.var_dir, settings.redis_port, out_dir)
        records = _ask(gateway, questions, keys, opts, err, keeper, out_dir)

    by_id = {q.id: q for q in questions}
    strategies = list(dict.fromkeys(r.strategy for r in records))
    summaries = {s: scoring.summarize(by_id, [r for r in records if r.strategy == s]) for s in strategies}
    rows = [report.question_row(by_id[r.question_id], r) for r in records]
    meta = {
        "set": str(opts.set_path), "gateway": gateway, "started": started.isoformat(timespec="seconds"),
        "questions": len(questions), "strategies": strategies, "timeout": opts.timeout, "concurrency": opts.concurrency,
    }
    md, js = report.write_reports(out_dir, meta, summaries, rows)
    report.print_table(out, summaries)
    out.print(f"wrote {md} and {js}", highlight=False, soft_wrap=True)
    print(report.summary_line(meta, summaries, js), flush=True)  # last line of stdout, for scripts
    return gate_failures(opts, summaries["loop"])
