"""The documents the gateway serves besides OpenAPI."""

from __future__ import annotations

import yaml

from pmsearch.shared.asyncapi import document


def test_gateway_serves_the_streams_asyncapi_document_as_json_and_yaml(api):
    as_json = api.http.get("/asyncapi")
    as_yaml = api.http.get("/asyncapi.yaml")
    assert as_json.status_code == 200 and as_json.headers["content-type"].startswith("application/json")
    assert as_yaml.status_code == 200 and as_yaml.headers["content-type"].startswith("application/yaml")
    assert as_json.json() == document()
    assert yaml.safe_load(as_yaml.text) == as_json.json()
    assert as_json.json()["asyncapi"].startswith("3.0")
