"""The writes an interface may ask for, one module per entity, and the rules they obey.

``workflows`` (start, cancel and the other transitions from outside the engine),
``claims`` (force release, force takeover and its adopt message), ``engines``
(registration, heartbeats, counters, the silent dead, the fleet snapshot), ``backfills``
(schedule, cancel), ``tokens`` (mint, revoke), ``demo_fleet`` (the demo fleet's seed and
its trickle of new workflows), and ``rules`` (read-only switch, operator reason, registered type),
which every service applies so the pages, the API and the admin cannot disagree.
``errors`` holds what the services refuse beyond the protocol's errors.

Nothing is re-exported here: import from the entity module, so a grep finds the one home.
The runtime's own fenced writes are claims.runtime.writes.
"""
