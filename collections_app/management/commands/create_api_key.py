from django.core.management.base import BaseCommand, CommandError

from collections_app.models import Agent, Role
from collections_app.services.keys import api_key_create, tenant_get_or_create


class Command(BaseCommand):
    help = "Create an API key (creating the tenant if missing); prints the key alone on the last line."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--role", required=True, choices=[r.value for r in Role])
        parser.add_argument("--agent", help="name of the agent this key acts for (created if missing)")
        parser.add_argument("--name", default="", help="a label for the key, shown in the admin")

    def handle(self, *args, tenant: str, role: str, agent: str | None, name: str, **options):  # type: ignore[no-untyped-def]
        if not tenant.strip():
            raise CommandError("--tenant must not be empty")
        tenant_obj = tenant_get_or_create(name=tenant.strip())
        agent_obj = None
        if agent:
            agent_obj, _ = Agent.objects.get_or_create(tenant=tenant_obj, name=agent)
        issued = api_key_create(tenant=tenant_obj, role=role, agent=agent_obj, name=name or f"{role} key")
        self.stderr.write(f"API key for tenant {tenant_obj.name} ({role}); it is shown only once:")
        self.stdout.write(issued.secret)
