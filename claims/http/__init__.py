"""The app's HTTP plumbing, under its pages and its API: the request an htmx page is
handed, the address a request came from, and the per-user read and write limits.

The project's middleware (weftboard.read_limit, weftboard.read_time_limit) and its
django-axes settings use them too; nothing here imports the project.
"""
