"""An exhaustive check of the claim protocol (docs/design.md §13).

The real protocol (``claims.protocol``: the registry, its decisions, the passes, the session
lease) runs against the in-memory store in a deterministic world: every engine's pass and
every operator's action is a coroutine that pauses before each store call, and the checker
decides, at each pause, who makes the next call, whether the clock moves, and whether the
call returns, fails before it commits, or commits and loses its answer. It visits every
such schedule up to a bound, states hashed so that equal states are explored once, and
checks the invariants at every state.

Nothing in ``claims`` or ``weftboard`` imports this package: the broken variants it can
switch in (``variants``) are reachable from the checker's tests and command only.
"""
