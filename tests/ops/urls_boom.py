from django.urls import path


def boom(request):  # type: ignore[no-untyped-def]
    raise RuntimeError("a bug deep in /work/secret/path.py")


urlpatterns = [path("boom", boom)]
