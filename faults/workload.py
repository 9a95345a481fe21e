"""The workload: demo workflows started through the JSON API, and an operator at the controls.

The starter spreads the workflows over the start window, in a seeded mix of the demo
types (ledger steps with side effects, sleeps, orders, invoices). The operator picks
running workflows at random and cancels them, force-releases their claims or forces a
takeover to another engine, through the same API an on-call engineer would use; a 409
(the epoch moved on meanwhile) is a normal answer and is counted as such. A second
operator runs bulk jobs: every few seconds it previews a query over a slice of the
workflows started so far (release or takeover of the live ones), and confirms it with the
count it saw, accepting a change (the faults move claims between preview and freeze).
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


class Api:
    """A bearer-token client of /api/v1/; returns (status, decoded body) and never raises
    on an HTTP error status (a dropped connection is status 0)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, payload: Any = None) -> tuple[int, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            f"{self.base_url}/api/v1{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                return error.code, json.loads(body or b"null")
            except ValueError:
                return error.code, body.decode(errors="replace")
        except (OSError, ValueError) as error:
            return 0, str(error)


def workflow_request(rng: random.Random, workflow_id: str) -> dict[str, Any]:
    """One start request of a seeded mix of the demo types."""
    kind = rng.random()
    if kind < 0.6:
        return {
            "workflow_id": workflow_id,
            "workflow_type": "ledger",
            "input": {
                "steps": rng.randint(2, 5),
                "step_delay_ms": rng.choice((0, 20, 50, 150)),
                # Some sleep long: a parked workflow stays held, so deaths strand more work.
                "sleep": rng.choice((0, 0, 0.5, 2, 5, 10)),
            },
        }
    if kind < 0.85:
        return {
            "workflow_id": workflow_id,
            "workflow_type": "order",
            "input": {"items": rng.randint(1, 4), "sleep": rng.choice((0, 1, 3, 6))},
        }
    return {
        "workflow_id": workflow_id,
        "workflow_type": "invoice",
        "input": {"lines": [rng.randint(100, 9_999) for _ in range(rng.randint(1, 5))]},
    }


@dataclass
class Workload:
    api: Api
    seed: int
    workflows: int
    start_window_s: float
    operator_interval_s: float = 0.8
    bulk_interval_s: float = 6.0
    bulk_jobs: list[int] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    start_failures: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for target, name in (
            (self._start_workflows, "starter"),
            (self._operate, "operator"),
            (self._operate_in_bulk, "bulk-operator"),
        ):
            thread = threading.Thread(target=target, name=f"workload-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _start_workflows(self) -> None:
        rng = random.Random(f"{self.seed}-starts")
        began = time.monotonic()
        for n in range(self.workflows):
            due = began + self.start_window_s * n / self.workflows
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            workflow_id = f"fault-{self.seed}-{n:05d}"
            status, _ = self.api.call("POST", "/workflows", workflow_request(rng, workflow_id))
            if status == 201:
                self.started.append(workflow_id)
            else:
                self.start_failures[f"{status}"] += 1

    def _operate(self) -> None:
        rng = random.Random(f"{self.seed}-operator")
        while not self._stop.wait(self.operator_interval_s * rng.uniform(0.5, 1.5)):
            if not self.started:
                continue
            # Recent starts are the ones most likely still running.
            workflow_id = rng.choice(self.started[-200:])
            action = rng.choices(("cancel", "release", "takeover"), weights=(2, 3, 3))[0]
            self.operations[f"{action}:{self._act(rng, action, workflow_id)}"] += 1

    def _act(self, rng: random.Random, action: str, workflow_id: str) -> str:
        if action == "cancel":
            status, _ = self.api.call(
                "POST", f"/workflows/{workflow_id}/cancel", {"reason": "fault harness"}
            )
            return str(status)
        status, body = self.api.call("GET", f"/workflows/{workflow_id}/ownership")
        if status != 200 or not isinstance(body, dict):
            return f"read {status}"
        claim = body.get("claim") or {}
        workflow = body.get("workflow") or {}
        if claim.get("epoch") is None or workflow.get("status") != "running":
            return "not running"
        payload: dict[str, Any] = {"expected_epoch": claim["epoch"], "reason": "fault harness"}
        if action == "takeover":
            status, engines = self.api.call("GET", "/engines?status=active")
            items = engines.get("items", []) if isinstance(engines, dict) else []
            if status != 200 or not items:
                return f"engines {status}"
            payload["target_engine_id"] = rng.choice(items)["engine_id"]
        status, _ = self.api.call("POST", f"/workflows/{workflow_id}/claim/{action}", payload)
        return str(status)

    def _operate_in_bulk(self) -> None:
        rng = random.Random(f"{self.seed}-bulk")
        while not self._stop.wait(self.bulk_interval_s * rng.uniform(0.5, 1.5)):
            if len(self.started) < 20:
                continue
            action = rng.choice(("release", "takeover"))
            self.operations[f"bulk-{action}:{self._bulk(rng, action)}"] += 1

    def _bulk(self, rng: random.Random, action: str) -> str:
        # A slice of ids by prefix: fault-<seed>-000.., a hundred workflows at most.
        hundred = rng.randrange(len(self.started) // 100 + 1)
        query = f'id STARTS_WITH "fault-{self.seed}-{hundred:03d}" AND state = "live"'
        ask = {"list": "claims", "query": query, "action": action}
        status, preview = self.api.call("POST", "/bulk-jobs/preview", ask)
        if status != 200 or not isinstance(preview, dict):
            return f"preview {status}"
        if not preview.get("count"):
            return "nothing selected"
        confirm = {
            **ask,
            "reason": "fault harness, in bulk",
            "expected_count": preview["count"],
            "accept_count_change": True,
        }
        status, job = self.api.call("POST", "/bulk-jobs", confirm)
        if status == 201 and isinstance(job, dict):
            self.bulk_jobs.append(int(job["id"]))
        return str(status)
