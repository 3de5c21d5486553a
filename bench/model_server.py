"""Which options the embedded model's server runs with (``python -m bench.model_server``).

The embedded model is most of a question's wall time, and its server has options that
change its speed but not its replies. This benchmark starts llama-cpp-python's server
once per variant, in turns (``--rounds`` times), and sends each the same answer attempts
(the demo's evidence for a few labelled questions, as :mod:`bench.prefix_cache` builds
them): seconds a call, prompt and generated tokens, and whether each reply is the one the
first variant gave (greedy decoding: a variant that only changes speed gives the same).

    python -m bench.model_server                     # llama-cpp-python's defaults vs pmsearch's
    python -m bench.model_server --variants defaults,pmsearch,prompt-lookup
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from bench._util import emit_json, format_table
from bench.prefix_cache import ROOT, evidence_for
from pmsearch.shared import passages as P
from pmsearch.shared import prompts
from pmsearch.shared.fencing import Fence
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.bookkeeping import call_model
from pmsearch.shared.llm.local_server import DEFAULT_MODEL, MODEL_ALIAS, OPTIONS, start_local_model, stop_local_model
from pmsearch.shared.settings import ModelSettings

# (question, a keyword that picks its evidence from the demo mailbox)
CASES = [
    ("Did the insurer accept the Golf claim after we sent the photos?", "CLM-2024-55817"),
    ("Where does Spedition Hüber pick up from April?", "Garching"),
    ("What did Harbor Mutual decide on the Transit hail claim?", "HM-88213"),
    ("What is invoice INV-2024-0173 for?", "INV-2024-0173"),
    ("When is the Q2 quarterly review and where?", "quarterly review"),
    ("How much did the Hamburg flight cost?", "SW7Q2K"),
]

VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {},  # llama-cpp-python's own: logits_all on
    "pmsearch": OPTIONS,
    # Drafts tokens by finding the last few generated tokens earlier in the prompt (an
    # answer copies names and figures from its passages); it needs logits_all on.
    "prompt-lookup": {**OPTIONS, "logits_all": "True", "draft_model": "prompt-lookup-decoding"},
}


async def attempts(base_url: str) -> list[dict[str, Any]]:
    """Every case once, after one uncounted call that leaves the system prompt cached."""
    settings = ModelSettings(
        model_base_url=base_url, model_output="json_object_schema", agent_model=MODEL_ALIAS, model_timeout_seconds=600
    )
    client = ModelClient(settings)
    cases = [(q, P.build(q, evidence_for(k))) for q, k in CASES]
    out = []
    try:
        for i, (question, shown) in enumerate([cases[-1], *cases]):
            messages = [
                {"role": "system", "content": prompts.system(prompts.prompt_settings())},
                # A fixed fence marker: every variant reads exactly the same prompt.
                {"role": "user", "content": prompts.user_turn(question, shown, Fence(marker="5e1f0c2a9b7d3e48"), prompts.ANSWER)},
            ]
            started = time.perf_counter()
            call = await call_model(
                client, "bench", messages, prompts.answer_model([p.ref for p in shown], "AnswerDraft"), name="answer"
            )
            if i:
                out.append({
                    "seconds": time.perf_counter() - started,
                    "prompt_tokens": call.prompt_tokens,
                    "completion_tokens": call.completion_tokens,
                    "reply": call.value.model_dump_json() if call.value is not None else f"({call.result})",
                })
    finally:
        await client.aclose()
    return out


def run_variant(options: dict[str, str]) -> list[dict[str, Any]]:
    from pmsearch.cli.stack import free_port

    port = free_port()
    proc = start_local_model(port, ROOT / DEFAULT_MODEL, n_ctx=4096, options=options, ready_timeout=300)
    try:
        return asyncio.run(attempts(f"http://127.0.0.1:{port}/v1"))
    finally:
        stop_local_model(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="defaults,pmsearch", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",")]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s): {', '.join(unknown)}")
    calls: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for _ in range(args.rounds):
        for name in names:
            calls[name] += run_variant(VARIANTS[name])

    base = names[0]
    rows, figures = [], {}
    for name in names:
        got = calls[name]
        seconds = [c["seconds"] for c in got]
        same = sum(c["reply"] == b["reply"] for c, b in zip(got, calls[base], strict=True))
        mean = statistics.mean(seconds)
        rows.append({
            "variant": name,
            "calls": len(got),
            "mean_s": round(mean, 2),
            "p50_s": round(statistics.median(seconds), 2),
            "prompt_tokens": round(statistics.mean(c["prompt_tokens"] for c in got)),
            "generated": round(statistics.mean(c["completion_tokens"] for c in got)),
            f"same_reply_as_{base}": f"{same}/{len(got)}",
            f"time_vs_{base}": round(mean / statistics.mean(c["seconds"] for c in calls[base]), 3),
        })
        figures[name] = {"mean_s": round(mean, 2), "same_replies": same, "calls": len(got),
                         "ratio": rows[-1][f"time_vs_{base}"]}
    print(format_table(rows))
    emit_json({"bench": "model_server", "base": base, "variants": figures})


if __name__ == "__main__":
    main()
