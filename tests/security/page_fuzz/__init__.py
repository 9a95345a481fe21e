"""The property-based fuzz of the pages (tests/security/test_page_fuzz.py): its table of
routes and parameters, the hostile values, the requests built from them, and the scene."""
