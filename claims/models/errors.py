"""What the models refuse: the rows that carry an epoch for good are never deleted
(docs/design.md §1, invariant 2, and §12)."""

from __future__ import annotations


class ClaimRowsAreKeptError(RuntimeError):
    """A claim row carries the fencing epoch for the id's whole life; deleting it would
    let a reused id mint an epoch that a stale engine still holds."""


class SessionRowsAreKeptError(RuntimeError):
    """A session row carries its engine's session epoch for good: deleting it would let
    the engine open epoch 1 again, and a claim naming an old epoch 1 come back to life."""
