"""Reads of the claim rows: the claims list (its filters, sorts, search and keyset pages),
one claim as an operator must see it, and claims counted per derived state."""
