"""The fault harness: a real fleet on PostgreSQL and Redis, a seeded nemesis, a history check.

``python -m faults`` (or ``./scripts/faults``) starts engines, beat and the web server on
a database and a Redis server of its own, runs a workload of demo workflows through the
JSON API, injects faults at random for a while, heals them, and then checks the recorded
history against the claim protocol's invariants. It exits non-zero on any violation and
prints the seed that replays the same fault schedule.
"""
