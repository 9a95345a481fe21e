from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "claims"
    verbose_name = "Workflow claims"

    def ready(self) -> None:
        from claims import checks, conf, metrics

        checks.register_checks()
        metrics.register_fleet_collector()
        # Engines (Celery workers) run no system checks, so a bad TTL must stop
        # every process here, before any claim work starts.
        conf.claim_timing()
