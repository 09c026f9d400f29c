import os
from typing import Any

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.keys import tenant_get_or_create
from accounts.memberships import staff_member_add
from accounts.models import Role


class Command(BaseCommand):
    help = (
        "Add a staff member to a tenant's admin with a role (creating the account and the tenant if missing). "
        "A generated password is printed once, alone on the last line. Safe to run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--role", required=True, choices=[r.value for r in Role])
        parser.add_argument(
            "--password-from-env",
            metavar="VAR",
            help="set the password from this environment variable (never from the command line: it would "
            "be kept in the shell history)",
        )

    def handle(
        self, *args: Any, username: str, tenant: str, role: str, password_from_env: str | None, **options: Any
    ) -> None:
        if not username.strip() or not tenant.strip():
            raise CommandError("the username and --tenant must not be empty")
        password = None
        if password_from_env:
            password = os.environ.get(password_from_env)
            if not password:
                raise CommandError(f"the environment variable {password_from_env} is not set or empty")
            try:
                validate_password(password)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
        tenant_obj = tenant_get_or_create(name=tenant.strip())
        member = staff_member_add(username=username.strip(), tenant=tenant_obj, role=role, password=password)
        what = "created" if member.user_created else ("role set" if member.role_changed else "unchanged")
        self.stderr.write(f"{member.user.username} is {role} of tenant {tenant_obj.name} ({what}).")
        if member.password:
            self.stderr.write("Password, shown only once:")
            self.stdout.write(member.password)
