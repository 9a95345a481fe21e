"""Create the local `admin` superuser and print its login, so `scripts/run` can show it."""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

USERNAME = "admin"


def password_file() -> Path:
    """One file per database, so running against another database never hides this one's login."""
    var = Path(settings.VAR_DIR)
    database = settings.DATABASES["default"]
    name = f"{database.get('HOST') or ''}/{database['NAME']}"
    if Path(str(database["NAME"])) == var / "weftboard.sqlite3":
        return var / "admin-password.txt"
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return var / f"admin-password-{digest}.txt"


def write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only, from the moment it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    # O_CREAT's mode does not apply to a file that already existed.
    path.chmod(0o600)


class Command(BaseCommand):
    help = (
        "Create the superuser 'admin' with a random password if it is missing (or with --reset), "
        "and print the login. The password is kept in var/admin-password.txt for later runs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset", action="store_true", help="Give 'admin' a new random password."
        )

    def handle(self, *args: Any, reset: bool = False, **options: Any) -> None:
        user_model = get_user_model()
        stored = password_file()
        with transaction.atomic():
            user = user_model.objects.filter(username=USERNAME).first()
            if user is not None and not reset:
                known = stored.read_text().strip() if stored.exists() else ""
                if known and user.check_password(known):
                    self.print_login(known)
                    return
                # The file is missing or belongs to another database: a printed login
                # that does not work is worse than a new password.
                self.stdout.write(
                    f"The password kept in {stored} does not match; setting a new one."
                )
            password = secrets.token_urlsafe(15)
            if user is None:
                user_model.objects.create_superuser(username=USERNAME, email="", password=password)
            else:
                user.set_password(password)
                user.is_active = user.is_staff = user.is_superuser = True
                user.save()
            write_private(stored, password + "\n")
        self.print_login(password)

    def print_login(self, password: str) -> None:
        self.stdout.write(f"Login: {USERNAME} / {password}")
