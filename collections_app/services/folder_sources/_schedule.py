"""One django-q2 schedule per collection with a folder source, every KB_SYNC_EVERY_MINUTES."""

from __future__ import annotations

from django.conf import settings

from collections_app.models import Collection
from collections_app.services.folder_sources._legacy import folder_sources_adopt_legacy

SCHEDULE_PREFIX = "folder sync "


def folder_sync_schedules_update() -> list[str]:
    """Make (or remove) one django-q2 schedule per collection with a folder source, per KB_SYNC_EVERY_MINUTES.

    Returns what it did, one line per collection, for the operator.
    """
    from django_q.models import Schedule

    done: list[str] = folder_sources_adopt_legacy()
    minutes = settings.KB_SYNC_EVERY_MINUTES
    wanted = {str(c.pk): c for c in Collection.objects.select_related("tenant").exclude(folder_source="")}
    for schedule in Schedule.objects.filter(name__startswith=SCHEDULE_PREFIX):
        if minutes <= 0 or schedule.name.removeprefix(SCHEDULE_PREFIX) not in wanted:
            schedule.delete()
            done.append(f"removed schedule {schedule.name}")
    if minutes <= 0:
        return [*done, "KB_SYNC_EVERY_MINUTES is not set: folder sources are synced only by hand"]
    for collection_id, collection in wanted.items():
        Schedule.objects.update_or_create(
            name=SCHEDULE_PREFIX + collection_id,
            defaults={
                "func": "collections_app.tasks.sync_folder_source",
                "args": repr((collection_id,)),
                "schedule_type": Schedule.MINUTES,
                "minutes": minutes,
                "repeats": -1,
            },
        )
        done.append(f"{collection.tenant.name}/{collection.name}: synced every {minutes} minute(s)")
    return done
