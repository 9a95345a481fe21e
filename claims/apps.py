from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "claims"
    verbose_name = "Workflow claims"

    def ready(self) -> None:
        from claims import checks, conf, metrics

        checks.register_checks()
        metrics.register_fleet_collector()
        # Connects the Celery worker hooks that make a worker process an engine.
        import claims.engine.worker  # noqa: F401

        # Engines (Celery workers) run no system checks, so a bad TTL must stop
        # every process here, before any claim work starts.
        conf.claim_timing()
