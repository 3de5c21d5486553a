# One image for every stage; the command picks the stage.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
COPY pyproject.toml README.md ./
COPY shared shared
COPY services services
COPY cli cli
COPY deploy deploy
COPY data data
# Install a CPU build of torch first where your index offers one; the image is large.
RUN pip install --no-cache-dir "torch==2.13.0" && pip install --no-cache-dir .
