"""The scripted model as its own process, for the benchmarks that drive many runs: an
honest brain (tests/fixtures/brains.py) that answers every call after a fixed latency.

In its own process the model's threads do not share the benchmark client's interpreter
lock, so the client's timing is not the model's and the reverse.

    python -m bench._model --latency 0.2 --port-file PATH
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pmsearch.testing.brains import honest
from pmsearch.testing.scripted_model import ScriptedModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, required=True, help="seconds before each answer")
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument(
        "--search-round", action="store_true",
        help="the first attempt finds no answer and asks for a search: three calls and two tool rounds a run",
    )
    args = parser.parse_args()
    brain = honest((lambda question: question) if args.search_round else None)
    model = ScriptedModel(lambda body: brain(body).model_copy(update={"delay": args.latency}))
    model._server.socket.listen(1024)  # a longer backlog: hundreds of runs connect at once
    model.record = lambda entry: None  # thousands of prompts would only fill memory
    model.serve_until_signalled(lambda: args.port_file.write_text(str(model.port)))

if __name__ == "__main__":
    main()
