"""Reads of the workflows: the workflows list and its counts per status, one workflow's
detail with its epoch timeline, and the single-row lookups the actions and the API make."""
