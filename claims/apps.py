from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "claims"
    verbose_name = "Workflow claims"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from claims import checks, conf, metrics
        from weftboard.private_var import close_sqlite_files

        # The embedded database and its side files stay 0600 in every process, however
        # it was started (weftboard.private_var).
        connection_created.connect(close_sqlite_files, dispatch_uid="weftboard-private-sqlite")

        checks.register_checks()
        metrics.register_fleet_collector()
        # Connects the Celery worker hooks that make a worker process an engine.
        import claims.engine.worker  # noqa: F401

        # Engines (Celery workers) run no system checks, so a bad TTL must stop
        # every process here, before any claim work starts.
        conf.claim_timing()
