"""Logging and the Prometheus endpoint for worker processes (the gateway serves
``/metrics`` itself)."""

from __future__ import annotations

import logging

from prometheus_client import start_http_server


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


def serve_metrics(port: int) -> None:
    start_http_server(port, addr="127.0.0.1")
