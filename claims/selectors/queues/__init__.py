"""Reads of the work waiting on the fleet: pending re-drives and visibility backfills."""
