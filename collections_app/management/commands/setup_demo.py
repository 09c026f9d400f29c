import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from collections_app.models import Membership, Role
from collections_app.services.keys import api_key_create, tenant_get_or_create


class Command(BaseCommand):
    help = "Create the demo tenant with an admin login and an editor API key (printed)."

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        tenant = tenant_get_or_create(name="demo")
        User = get_user_model()
        user = User.objects.filter(username="admin").first()
        password = secrets.token_urlsafe(12)
        if user is None:
            user = User.objects.create_superuser("admin", "admin@example.com", password)
        else:
            user.set_password(password)
            user.save(update_fields=["password"])
        Membership.objects.update_or_create(user=user, tenant=tenant, defaults={"role": Role.ADMIN})
        issued = api_key_create(tenant=tenant, role=Role.EDITOR, name="demo editor key")
        self.stdout.write("")
        self.stdout.write("kbsite demo tenant 'demo' is ready.")
        self.stdout.write(
            f"  admin:    http://127.0.0.1:{os.environ.get('PORT', '8000')}/admin/  user: admin  password: {password}"
        )
        self.stdout.write(f"  API key:  {issued.secret}   (editor, tenant demo)")
        self.stdout.write("")
