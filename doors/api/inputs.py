"""Request inputs that refuse what they do not know.

DRF drops fields a serializer does not declare: `{"query": ..., "min_score": 0.9}` searched as if `min_score`
had not been sent, and a typo (`"reder"`) quietly read as nobody. Every input serializer of the API derives
from `StrictInput`, so such a field is a 400 that names it and the fields the request does take.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers


class StrictInput(serializers.Serializer):
    """A request body (or query string) with a field this serializer does not declare is refused (400).

    Nested inputs (a citation in `citations`) derive from it too, so the refusal names where the field is.
    `sent_back`: names an answer carries that a client may send back unchanged (ignored, never refused).
    """

    sent_back: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            accepted = [name for name, field in self.fields.items() if not field.read_only]
            unknown = [name for name in data if name not in self.fields and name not in self.sent_back]
            if unknown:
                if accepted:
                    message = f"unknown field; the accepted fields are: {', '.join(accepted)}"
                else:
                    message = "unknown field; this request takes no fields (send an empty body)"
                raise serializers.ValidationError({str(name): [message] for name in unknown})
        return super().to_internal_value(data)


class NoInput(StrictInput):
    """The body of a request that takes none: any field sent is refused rather than ignored."""
