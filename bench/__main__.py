"""Run every benchmark, one after another (``python -m bench``)."""

import subprocess
import sys

BENCHES = ["bench.verifier", "bench.big_mail", "bench.redis_memory", "bench.search", "bench.ingest", "bench.gateway",
           "bench.agentic", "bench.prefix_cache", "bench.soak", "bench.load", "bench.path", "bench.slots"]

if __name__ == "__main__":
    failed = [b for b in BENCHES if subprocess.call([sys.executable, "-m", b]) != 0]
    sys.exit(1 if failed else 0)
