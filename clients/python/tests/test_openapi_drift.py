"""The client's models against the server's OpenAPI document, so a field that drifts on either
side fails here instead of in a user's code: every model class names the wire type it reads,
every field its ``from_json`` reads (or ``Turn.to_json`` writes) is a property of that schema,
a field the client requires is required by the server, and every property of the schema is
read (or listed in ``NOT_READ`` with the reason). The document is the live server's
``/openapi.json``, built from the same code as the routes."""

from __future__ import annotations

import inspect
import re
from typing import Any, Dict, Set, Tuple

import httpx
import pytest

from mnemos_client import models

# Each model class with the wire type (the schema in ``components/schemas``) it mirrors.
SCHEMA_OF: Dict[str, str] = {
    "Moment": "MomentOut",
    "Forgotten": "ForgottenOut",
    "Scores": "ScoresOut",
    "Memory": "MemoryOut",
    "AddedTurn": "AddedTurnOut",
    "JobError": "JobErrorOut",
    "JobReport": "JobReportOut",
    "AddResult": "AddTurnsResponse",
    "Signal": "SignalOut",
    "Hop": "HopOut",
    "RankerFeature": "FeatureOut",
    "Ranker": "RankerOut",
    "Adjustment": "AdjustmentOut",
    "Breakdown": "BreakdownOut",
    "SearchHit": "HitOut",
    "SearchResult": "SearchResponse",
    "RecallItem": "ContextItemOut",
    "RecallResult": "RecallResponse",
    "MemoryPage": "MemoryPage",
    "ForgetResult": "ForgetResponse",
    "ForgetCandidate": "ForgetCandidateOut",
    "ForgetMatchResult": "ForgetMatchResponse",
    "HistoryEntry": "HistoryEntryOut",
    "Access": "AccessOut",
    "AccessLog": "AccessLogResponse",
    "StoredTurn": "TurnOut",
    "TurnContext": "TurnContextResponse",
    "StateCounts": "StateCountsOut",
    "JobCounts": "JobCountsOut",
    "Overview": "OverviewResponse",
    "RetentionPoint": "RetentionPointOut",
    "Retention": "RetentionResponse",
    "PurgeResult": "PurgeResponse",
    "AgentStats": "AgentStatsOut",
    "Stats": "StatsResponse",
    "PresetParam": "ParamOut",
    "Preset": "PresetOut",
    "Job": "JobOut",
    "PersonaValue": "PersonaValueOut",
    "PersonaKey": "PersonaKeyOut",
    "TimelineNode": "TimelineNodeOut",
    "ChainNode": "ChainNodeOut",
    "Chain": "ChainOut",
    "Calibration": "CalibrationOut",
    "Chains": "ChainsOut",
    "View": "ViewResponse",
    "Health": "Health",
    "ApiKey": "ApiKeyOut",
    "CreatedKey": "CreatedKey",
    # Input: the fields ``Turn.to_json`` writes.
    "Turn": "TurnIn",
}

# Names in ``models.__all__`` that are not wire objects (aliases, unions, helpers).
NOT_MODELS = {"ForgetCause", "SelectedBy", "ViewData", "format_time"}

# Properties a class deliberately leaves unread, with why.
NOT_READ: Dict[str, Set[str]] = {
    # Readiness details are for operators; the client's health check only needs `status`.
    "Health": {"store"},
}

# ``_Reader`` calls that raise on a missing field (the others take a missing one as None).
OPTIONAL_READS = re.compile(r"^opt_")


@pytest.fixture(scope="module")
def document(server_url: str) -> Dict[str, Any]:
    answer = httpx.get(f"{server_url}/openapi.json", timeout=10.0)
    assert answer.status_code == 200, answer.text
    return answer.json()


def schema_fields(document: Dict[str, Any], name: str) -> Tuple[Set[str], Set[str]]:
    """(properties, required) of a schema, following ``allOf`` and ``$ref`` (a flattened
    wire type is an ``allOf`` of its parts)."""
    schema = document["components"]["schemas"][name]
    props: Set[str] = set((schema.get("properties") or {}).keys())
    required: Set[str] = set(schema.get("required") or ())
    for part in schema.get("allOf") or ():
        if "$ref" in part:
            p, r = schema_fields(document, part["$ref"].rsplit("/", 1)[-1])
        else:
            p = set((part.get("properties") or {}).keys())
            r = set(part.get("required") or ())
        props |= p
        required |= r
    return props, required


def fields_read(cls: type) -> Tuple[Set[str], Set[str]]:
    """(every JSON key the class reads or writes, the keys it requires) from its source."""
    if cls is models.Turn:
        source = inspect.getsource(cls.to_json)
        keys = set(re.findall(r'body\["([^"]+)"\]', source))
        keys |= set(re.findall(r'"(\w+)": self\.', source))
        return keys, set()
    source = inspect.getsource(cls.from_json)
    calls = re.findall(r'\br\.(\w+)\(\s*"([^"]+)"', source)
    keys = {key for _, key in calls}
    keys |= set(re.findall(r'\br\.data\.get\(\s*"([^"]+)"', source))
    keys |= set(re.findall(r'\br\.data\["([^"]+)"\]', source))
    required = {key for call, key in calls if not OPTIONAL_READS.match(call)}
    # A field read only after checking it is there is optional.
    required -= set(re.findall(r'\br\.data\.get\(\s*"([^"]+)"', source))
    required -= set(re.findall(r'"([^"]+)" in r\.data', source))
    return keys, required


def test_every_model_class_names_its_wire_type() -> None:
    names = set(models.__all__) - NOT_MODELS
    assert names == set(SCHEMA_OF), (
        "map each new model class to its schema in SCHEMA_OF (or list it in NOT_MODELS): "
        f"unmapped {sorted(names - set(SCHEMA_OF))}, gone {sorted(set(SCHEMA_OF) - names)}"
    )


@pytest.mark.parametrize("name", sorted(SCHEMA_OF))
def test_model_fields_match_the_schema(document: Dict[str, Any], name: str) -> None:
    schema = SCHEMA_OF[name]
    assert schema in document["components"]["schemas"], f"{name}: no schema {schema}"
    props, server_required = schema_fields(document, schema)
    keys, client_required = fields_read(getattr(models, name))
    assert keys, f"{name}: no field found in its source (has the reading code changed?)"
    assert not keys - props, f"{name} reads {sorted(keys - props)}, not in {schema}"
    unread = props - keys - NOT_READ.get(name, set())
    assert not unread, f"{schema} has {sorted(unread)}, which {name} does not read"
    loose = client_required - server_required
    assert not loose, (
        f"{name} requires {sorted(loose)}, which {schema} does not promise (it may be absent)"
    )
