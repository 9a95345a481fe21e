"""Fuzzers that keep every input answered: schemathesis against the JSON API of a live
server (``python -m fuzz``, ``scripts/fuzz-api``); the pages' fuzz is a test of the suite
(tests/security/test_page_fuzz.py)."""
