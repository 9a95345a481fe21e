"""Reads of the fleet as a whole: the snapshot beat takes of it, the overview and its
alert rules, the totals /metrics shows, the history charts and the reclaim scan."""
