"""An .eml message built in tests: a body under its subject, headers, alternatives, attachments."""

from __future__ import annotations

from email.message import EmailMessage

REFUNDS = "Refunds for damaged parcels are paid to the original card within five working days."


def eml_bytes(*, attachments: list[tuple[str, bytes, str]] = (), html: str = "", **headers: str) -> bytes:  # type: ignore[assignment]
    message = EmailMessage()
    message["Subject"] = headers.get("subject", "Refund policy for damaged parcels")
    message["From"] = headers.get("sender", "Ada Lovelace <Ada@Example.com>")
    message["To"] = "Bob <bob@example.com>, carol@example.com"
    message["Cc"] = "dave@example.com"
    message["Date"] = "Tue, 03 Feb 2026 10:15:00 +0100"
    message["Message-ID"] = "<refunds-2@example.com>"
    message["References"] = "<refunds-1@example.com>"
    message.set_content(f"Hi Bob,\n\n{REFUNDS}\n\nAda")
    if html:
        message.add_alternative(html, subtype="html")
    for filename, content, mime in attachments:
        maintype, subtype = mime.split("/")
        message.add_attachment(content, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()
