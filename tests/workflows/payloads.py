"""The documented event payloads under tests/workflows/events/ (see its README for sources)."""

from __future__ import annotations

import json
from pathlib import Path

EVENTS = Path(__file__).resolve().parent / "events"


def payload(name: str) -> dict:
    """``github.event`` for fixture ``name`` (file name without ``.json``), a fresh copy."""
    return json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))


def github_context(event_name: str, fixture: str, **extra: object) -> dict:
    """A ``github`` context as the runner builds it: the payload plus the values GitHub
    documents for the event (``ref``/``sha`` of the default branch for schedule and
    workflow_dispatch on main, the merge ref for pull_request)."""
    event = payload(fixture)
    ctx: dict = {"event_name": event_name, "event": event, "repository": "acme/triton",
                 "repository_owner": "acme", "server_url": "https://github.com", "run_id": "1234"}
    if event_name in ("schedule", "workflow_dispatch", "workflow_run", "issue_comment"):
        ctx.update(ref="refs/heads/main", ref_name="main", sha="5" * 40)
    elif event_name == "pull_request":
        ctx.update(ref=f"refs/pull/{event['number']}/merge", sha="2" * 40)
    elif event_name == "merge_group":
        ctx.update(ref=event["merge_group"]["head_ref"], sha=event["merge_group"]["head_sha"])
    ctx.update(extra)
    return ctx
