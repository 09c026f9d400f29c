from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.issuing import ANY_READER, api_key_create, readers_named
from accounts.keys import tenant_get_or_create
from accounts.models import Agent, Role
from infra.errors import Invalid


class Command(BaseCommand):
    help = "Create an API key (creating the tenant if missing); prints the key alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--role", required=True, choices=[r.value for r in Role])
        parser.add_argument("--agent", help="name of the agent this key acts for (created if missing)")
        parser.add_argument("--name", default="", help="a label for the key, shown in the admin")
        parser.add_argument(
            "--readers",
            default="",
            help="the registered readers this key may name in searches, maps and citation checks: comma-separated "
            f"names, or '{ANY_READER}' for every reader of the tenant. Default: none",
        )

    def handle(
        self, *args: Any, tenant: str, role: str, agent: str | None, name: str, readers: str, **options: Any
    ) -> None:
        if not tenant.strip():
            raise CommandError("--tenant must not be empty")
        try:
            # One transaction: a refused --readers leaves no tenant, agent or key behind.
            with transaction.atomic():
                tenant_obj = tenant_get_or_create(name=tenant.strip())
                delegation = readers_named(tenant=tenant_obj, names=readers.split(","))
                agent_obj = None
                if agent:
                    agent_obj, _ = Agent.objects.get_or_create(tenant=tenant_obj, name=agent)
                issued = api_key_create(
                    tenant=tenant_obj, role=role, agent=agent_obj, name=name or f"{role} key", readers=delegation
                )
        except Invalid as exc:
            raise CommandError(str(exc)) from None
        acts_for = (
            "any reader"
            if issued.key.any_reader
            else ", ".join(r.name for r in issued.key.readers.all()) or "no reader"
        )
        self.stderr.write(
            f"API key for tenant {tenant_obj.name} ({role}), acting for {acts_for}; it is shown only once:"
        )
        self.stdout.write(issued.secret)
