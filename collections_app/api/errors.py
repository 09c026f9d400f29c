from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):  # type: ignore[no-untyped-def]
    return drf_exception_handler(exc, context)
