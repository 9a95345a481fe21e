"""Reads of the engines: the engine pages' rows, liveness and silence, worker names,
session leases, passes, and what the operator's engine actions and the ticks read."""
