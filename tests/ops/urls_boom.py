from django.urls import path


def boom(request):
    raise RuntimeError("a bug deep in /work/secret/path.py")


urlpatterns = [path("boom", boom)]
