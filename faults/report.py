"""The report of a run: the seed to replay, the faults, each invariant and what was seen."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from .checks import SHOWN_VIOLATIONS
from .run import Outcome


def replay_command(outcome: Outcome) -> str:
    options = outcome.options
    return (
        f"./scripts/faults --seed {options.seed} --duration {options.duration_s:g}"
        f" --workflows {options.workflows} --engines {options.engines}"
        f" --ownership-mode {options.ownership_mode}"
    )


def report_lines(outcome: Outcome) -> list[str]:
    options, timing = outcome.options, outcome.options.timing
    verdict = "PASSED" if outcome.passed else "FAILED"
    kinds = Counter(record.kind for record in outcome.faults)
    injected = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
    lines = [
        f"# Fault run {verdict}: seed {options.seed}",
        "",
        f"- replay: `{replay_command(outcome)}`",
        f"- fleet: {options.engines} engines (Celery, threads pool), beat and the web server on"
        f" PostgreSQL and a private Redis, in the {options.ownership_mode} ownership mode;"
        f" TTL {timing.ttl_ms} ms, renew interval {timing.renew_interval_ms} ms",
        f"- ran {outcome.elapsed_s:.0f} s: faults for {options.duration_s:g} s, then a quiet"
        f" period of {2 * timing.stranded_bound_ms / 1000 + 3:g} s (no fault, start or operator"
        " call)",
        f"- workload: {outcome.workload['started']} workflows started through the API"
        f" (failed starts: {outcome.workload['start_failures'] or 'none'}); final statuses"
        f" {outcome.workload['final_status']}",
        f"- operator calls (action:HTTP status): {outcome.workload['operations']}",
        f"- most database sessions held at once, per process: {outcome.workload['sessions_max']}",
        f"- faults injected: {len(outcome.faults)} ({injected})",
        "",
        "| check | result | what was seen |",
        "|---|---|---|",
    ]
    for check in outcome.checks:
        seen = "; ".join(fact.strip() for fact in check.facts)
        result = "pass" if check.passed else f"**{len(check.violations)} violation(s)**"
        lines.append(f"| {check.name} | {result} | {seen} |")
    lines += ["", f"Failover: {outcome.failover.summary()}", ""]
    lines += ["Ghost holders (held by a live holder, no progress past the bound), by fault:"]
    lines += [f"- {line}" for line in outcome.ghosts] + [""]
    for check in outcome.checks:
        lines.append(f"- **{check.name}**: {check.invariant}.")
        lines += [f"    - {fact.rstrip()}" for fact in check.facts[1:]]
        for violation in check.violations[:SHOWN_VIOLATIONS]:
            lines.append(f"    - VIOLATION {violation}")
        if len(check.violations) > SHOWN_VIOLATIONS:
            lines.append(f"    - ... and {len(check.violations) - SHOWN_VIOLATIONS} more")
    if outcome.harness_errors:
        lines += ["", "Harness errors (the run is not trustworthy):"]
        lines += [f"- {error}" for error in outcome.harness_errors]
    lines += ["", "Faults, in order (database time relative to the first):"]
    origin = outcome.faults[0].started_ms if outcome.faults else 0
    for record in outcome.faults:
        held = f", held {len(record.held)} running" if record.engine_id else ""
        lines.append(
            f"- {(record.started_ms - origin) / 1000:7.1f} s  {record.kind:<13} {record.target}"
            f" ({(record.ended_ms - record.started_ms) / 1000:.1f} s{held}) {record.detail}"
        )
    return lines


def report_write(outcome: Outcome, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"report-seed{outcome.options.seed}"
    path = directory / f"{stem}.md"
    path.write_text("\n".join(report_lines(outcome)) + "\n")
    payload = {
        "seed": outcome.options.seed,
        "ownership_mode": outcome.options.ownership_mode,
        "passed": outcome.passed,
        "duration_s": outcome.options.duration_s,
        "elapsed_s": outcome.elapsed_s,
        "workload": outcome.workload,
        "checks": [
            {"name": c.name, "passed": c.passed, "facts": c.facts, "violations": c.violations}
            for c in outcome.checks
        ],
        "failover_ms": outcome.failover.latencies_ms,
        "faults": [asdict(record) | {"held": len(record.held)} for record in outcome.faults],
        "harness_errors": outcome.harness_errors,
    }
    (directory / f"{stem}.json").write_text(json.dumps(payload, indent=2) + "\n")
    return path
