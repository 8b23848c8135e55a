"""The lab lists its models, in each provider's shape (so bulkhead's model picker can be tried offline).

    GET /v1/models            Anthropic's list (`anthropic-version` header) or OpenAI's (vLLM's
                              `max_model_len` included, as vLLM sends it)
    GET /foundation-models    Bedrock's control plane: ListFoundationModels
    GET /inference-profiles   Bedrock's control plane: ListInferenceProfiles

Every lab model behaves the same (the lab model answers whatever `model` a request names); the
list exists so a client can show and pick one.
"""

from __future__ import annotations

from typing import Any

LAB_MODELS: tuple[tuple[str, str], ...] = (
    ("lab-1", "Lab model 1 (offline, deterministic)"),
    ("lab-1-mini", "Lab model 1 mini (the same model under another name)"),
)
CREATED_AT = "2026-01-01T00:00:00Z"
CREATED = 1767225600  # the same moment, in seconds


def anthropic_models() -> dict[str, Any]:
    data = [
        {"type": "model", "id": model, "display_name": name, "created_at": CREATED_AT}
        for model, name in LAB_MODELS
    ]
    return {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}


def openai_models(window: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {
                "id": model,
                "object": "model",
                "created": CREATED,
                "owned_by": "bulkhead-lab",
                "max_model_len": window,
            }
            for model, _name in LAB_MODELS
        ],
    }


def bedrock_foundation_models(region: str = "us-east-1") -> dict[str, Any]:
    return {
        "modelSummaries": [
            {
                "modelArn": f"arn:aws:bedrock:{region}::foundation-model/{model}",
                "modelId": model,
                "modelName": name,
                "providerName": "bulkhead lab",
                "inputModalities": ["TEXT"],
                "outputModalities": ["TEXT"],
                "responseStreamingSupported": True,
                "customizationsSupported": [],
                "inferenceTypesSupported": ["ON_DEMAND"],
                "modelLifecycle": {"status": "ACTIVE"},
            }
            for model, name in LAB_MODELS
        ]
    }


def bedrock_inference_profiles(region: str = "us-east-1") -> dict[str, Any]:
    model, name = LAB_MODELS[0]
    return {
        "inferenceProfileSummaries": [
            {
                "inferenceProfileName": f"US {name}",
                "inferenceProfileId": f"us.{model}",
                "inferenceProfileArn": f"arn:aws:bedrock:{region}:000000000000:inference-profile/us.{model}",
                "description": "routes lab-1 across the lab's regions",
                "status": "ACTIVE",
                "type": "SYSTEM_DEFINED",
                "createdAt": CREATED_AT,
                "updatedAt": CREATED_AT,
                "models": [{"modelArn": f"arn:aws:bedrock:{region}::foundation-model/{model}"}],
            }
        ]
    }


def listing(method: str, path: str, headers: dict[str, str], window: int) -> dict[str, Any] | None:
    """The body answering a model-listing request, or None when the request is something else."""
    if method != "GET":
        return None
    path = path.rstrip("/")
    if path.endswith("/v1/models") or path.endswith("/models"):
        return anthropic_models() if "anthropic-version" in headers else openai_models(window)
    if path.endswith("/foundation-models"):
        return bedrock_foundation_models()
    if path.endswith("/inference-profiles"):
        return bedrock_inference_profiles()
    return None
