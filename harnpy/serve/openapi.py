"""The OpenAPI 3.1 document ``GET /openapi.json`` serves (request and snapshot schemas come
from the pydantic models, so the document and the validation cannot drift apart)."""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_schema"]


def _error_ref() -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _response_ref(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Response"}}},
    }


def openapi_schema(program: Any) -> dict[str, Any]:
    """The OpenAPI document of a replica serving ``program``."""
    from harnpy import __version__
    from harnpy.serve.app import CreateResponse
    from harnpy.serve.completion import CompletionSnapshot

    snap = CompletionSnapshot.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = snap.pop("$defs", {})
    create = CreateResponse.model_json_schema()
    create["properties"]["entry"]["description"] = "one of: " + ", ".join(sorted(program.entries))
    session = {"name": "sessionId", "in": "query", "required": False, "schema": {"type": "string"}}
    rid = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    common = {
        "401": {"description": "missing or unknown API key", **_error_ref()},
        "404": {"description": "no such response (or not the caller's)", **_error_ref()},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "harnpy serve", "version": __version__},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                **defs,
                "CreateResponse": create,
                "CompletionSnapshot": snap,
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["type", "message"],
                            "properties": {
                                "type": {"type": "string"},
                                "message": {"type": "string"},
                            },
                        }
                    },
                },
                "Response": {
                    "type": "object",
                    "required": ["object", "id", "status"],
                    "properties": {
                        "object": {"const": "response"},
                        "id": {"type": "string"},
                        "status": {"enum": ["in_progress", "completed", "failed", "cancelled"]},
                        "entry": {"type": ["string", "null"]},
                        "sessionId": {"type": ["string", "null"]},
                        "createdAt": {"type": "integer", "description": "epoch ms"},
                        "updatedAt": {"type": "integer"},
                        "completedAt": {"type": ["integer", "null"]},
                        "metadata": {"type": "object"},
                        "output": {"description": "the entry point's return value as JSON"},
                        "snapshot": {"$ref": "#/components/schemas/CompletionSnapshot"},
                        "error": {
                            "type": "object",
                            "properties": {
                                "category": {"type": "string"},
                                "message": {"type": "string"},
                                "code": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/responses": {
                "post": {
                    "summary": "Start a run of an entry point",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/CreateResponse"}
                            }
                        },
                    },
                    "responses": {
                        "200": _response_ref("finished (completed or failed)"),
                        "202": _response_ref("in_progress: parked, still running or background"),
                        "400": {
                            "description": "bad JSON, bad field, unknown entry",
                            **_error_ref(),
                        },
                        "413": {"description": "body too large", **_error_ref()},
                        **common,
                    },
                }
            },
            "/v1/responses/{id}": {
                "get": {
                    "summary": "Poll a response",
                    "parameters": [rid, session],
                    "responses": {"200": _response_ref("the response"), **common},
                }
            },
            "/v1/responses/{id}/events": {
                "get": {
                    "summary": "Server-Sent Events of a run (Last-Event-ID resumes)",
                    "parameters": [
                        rid,
                        session,
                        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "event stream; each data line is a run event",
                            "content": {"text/event-stream": {"schema": {"type": "string"}}},
                        },
                        **common,
                    },
                }
            },
            "/v1/responses/{id}/cancel": {
                "post": {
                    "summary": "Cancel a run",
                    "parameters": [rid, session],
                    "responses": {"200": _response_ref("the response"), **common},
                }
            },
            "/v1/waitpoints/{id}/complete": {
                "post": {
                    "summary": "Complete a durable waitpoint with a value",
                    "parameters": [rid],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"value": {}}}
                            }
                        }
                    },
                    "responses": {
                        "200": {"description": "{id, status, completed}"},
                        **common,
                    },
                }
            },
            "/v1/waitpoints/{id}/cancel": {
                "post": {
                    "summary": "Cancel a durable waitpoint",
                    "parameters": [rid],
                    "responses": {"200": {"description": "{id, status, cancelled}"}, **common},
                }
            },
            "/healthz": {"get": {"summary": "Liveness", "security": [], "responses": {}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "security": [], "responses": {}}},
            "/openapi.json": {"get": {"summary": "This document", "security": [], "responses": {}}},
        },
    }
