"""Reads of the work waiting on the fleet: pending re-drives, visibility backfills and bulk
jobs."""
