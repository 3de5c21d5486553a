"""What the fixed prompt prefix saves on the embedded model (``python -m bench.prefix_cache``).

Every passage-reading call of both stages starts with the same system prompt, so
llama.cpp's server, which keeps the last prompt's state, reads it only once. This
benchmark sends the same answer attempts twice, in two blocks: as pmsearch sends them,
and with a fresh nonce at the start of the system prompt (which defeats the reuse, as a
per-call fence in the system prompt would). Same passages, same questions, same schema.

Evidence comes from the demo mailbox, parsed as the ingester parses it: for each
question, the messages whose text holds a keyword. The model server is
``PM_MODEL_BASE_URL`` when set, else the embedded model started here.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from pathlib import Path

from bench._util import emit_json, format_table, percentile
from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.shared import passages as P
from pmsearch.shared import prompts
from pmsearch.shared.fencing import Fence
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.bookkeeping import call_model
from pmsearch.shared.messages import EvidenceAttachment, EvidenceMessage
from pmsearch.shared.settings import ModelSettings

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
CASES = [
    ("Did the insurer accept the Golf claim after we sent the photos?", "CLM-2024-55817"),
    ("Where does Spedition Hüber pick up from April?", "Garching"),
    ("What did Harbor Mutual decide on the Transit hail claim?", "HM-88213"),
    ("What is invoice INV-2024-0173 for?", "INV-2024-0173"),
]
ROUNDS = 2


def evidence_for(keyword: str) -> list[EvidenceMessage]:
    out = []
    for path in sorted(DEMO.glob("*/*/*/*.eml")):
        if path.parent.name in ("Quarantine", "Junk"):
            continue
        m = parse_message(path.read_bytes(), folder=path.parent.name)
        text = m.body_text + " ".join(a.text or "" for a in m.attachments)
        if keyword.casefold() in text.casefold() and not m.quarantined:
            out.append(
                EvidenceMessage(
                    message_id=f"m{len(out)}", tenant_id="bench", thread_id=m.normalized_subject[:40],
                    mailbox=path.parts[-3], sender=m.sender.display, date=m.date, subject=m.subject,
                    body=m.body_text, attachments=[EvidenceAttachment(name=a.filename, text=a.text) for a in m.attachments if a.text],
                )
            )
    return out[:8]


async def attempt(client: ModelClient, question: str, shown: list[P.Passage], nonce: bool) -> tuple[float, int]:
    system = (f"[{secrets.token_hex(8)}]\n" if nonce else "") + prompts.system(prompts.prompt_settings())
    turn = prompts.user_turn(question, shown, Fence.new(), prompts.ANSWER)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": turn}]
    started = time.perf_counter()
    reply = await call_model(client, "bench", messages, prompts.answer_model([p.ref for p in shown], "AnswerDraft"), name="answer")
    return time.perf_counter() - started, reply.prompt_tokens


async def run(base_url: str) -> dict:
    settings = ModelSettings(model_base_url=base_url, model_output=os.environ.get("PM_MODEL_OUTPUT", "json_object_schema"),
                             agent_model=os.environ.get("PM_AGENT_MODEL", "local"), model_timeout_seconds=300)
    client = ModelClient(settings)
    cases = [(q, P.build(q, evidence_for(k))) for q, k in CASES]
    seconds: dict[str, list[float]] = {"fixed prefix": [], "nonce prefix": []}
    tokens = 0
    # One block per variant, not alternating: the server keeps only the last prompt, so
    # a nonce call in between would spoil the next fixed call's cache. The first call of
    # a block warms it and is not counted.
    for label, nonce in (("fixed prefix", False), ("nonce prefix", True)):
        await attempt(client, *cases[-1], nonce=nonce)
        for _ in range(ROUNDS):
            for question, shown in cases:
                took, tokens = await attempt(client, question, shown, nonce)
                seconds[label].append(took)
    await client.aclose()
    return {"seconds": seconds, "prompt_tokens_last": tokens}


def main() -> None:
    base_url = os.environ.get("PM_MODEL_BASE_URL")
    proc = None
    if not base_url:
        from pmsearch.cli.stack import free_port
        from pmsearch.shared.llm.local_server import DEFAULT_MODEL, start_local_model, stop_local_model

        port = free_port()
        proc = start_local_model(port, ROOT / DEFAULT_MODEL, ready_timeout=300)
        base_url = f"http://127.0.0.1:{port}/v1"
    try:
        out = asyncio.run(run(base_url))
    finally:
        if proc is not None:
            stop_local_model(proc)
    rows = [
        {"prompt": label, "calls": len(v), "p50_s": percentile(v, 50), "mean_s": sum(v) / len(v)}
        for label, v in out["seconds"].items()
    ]
    print(format_table(rows))
    fixed, nonce = (sum(v) / len(v) for v in out["seconds"].values())
    # The ratio holds on a noisy machine; the absolute seconds do not.
    figures = {"bench": "prefix_cache", "fixed_mean_s": round(fixed, 2), "nonce_mean_s": round(nonce, 2),
               "saved_s_per_call": round(nonce - fixed, 2), "ratio": round(fixed / nonce, 3)}
    print(f"the fixed prefix saves {nonce - fixed:.1f} s a call ({1 - fixed / nonce:.0%})")
    emit_json(figures)


if __name__ == "__main__":
    main()
