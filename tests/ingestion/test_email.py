"""Email: the body is the text under the subject; sender, date, recipients and thread are metadata;
attachments are documents of their own, linked to their message."""

from __future__ import annotations

import datetime as dt
from email.message import EmailMessage
from pathlib import Path

from collections_app.models import Build, Chunk, Document
from ingestion.email import parse_email
from tests.files.documents import pdf_bytes
from tests.files.email import eml_bytes
from tests.files.msg import MsgAttachment, MsgRecipient, MsgSpec, msg_bytes
from tests.margins import assert_clears

RACK = "The database servers move to rack twelve in the basement on Friday evening."


def test_a_message_with_a_pdf_and_an_unsupported_attachment(cast, collection, upload):
    pdf = pdf_bytes([[("Claims", "Damaged parcels are photographed before the refund is approved.")]])
    content = eml_bytes(
        attachments=[("claims.pdf", pdf, "application/pdf"), ("setup.exe", b"MZ\x90\x00", "application/octet-stream")]
    )

    response = upload(cast.editor, collection, "refunds.eml", content)

    assert response.status_code == 202
    message = Document.objects.get(pk=response.json()["document_id"])
    assert message.status == "done", message.error
    assert message.metadata == {
        "author": "ada@example.com",
        "created": "2026-02-03T10:15:00+01:00",
        "subject": "Refund policy for damaged parcels",
        "recipients": ["bob@example.com", "carol@example.com", "dave@example.com"],
        "thread": "refunds-1@example.com",
    }
    body = Chunk.objects.get(document=message, text__contains="original card")
    assert body.section == ["Refund policy for damaged parcels"]
    assert body.text.startswith("Refund policy for damaged parcels")  # the subject heads the body
    assert body.metadata["author"] == "ada@example.com"  # filterable on every paragraph
    assert body.metadata["thread"] == "refunds-1@example.com"
    assert [w for w in message.warnings if "setup.exe" in w], message.warnings

    attachment = Document.objects.get(parent=message)
    assert attachment.filename == "claims.pdf"
    assert attachment.status == "done", attachment.error
    assert attachment.source_uri == "upload://refunds.eml#attachment=claims.pdf"
    assert Chunk.objects.get(document=attachment, text__contains="photographed").page == 1
    assert not Document.objects.filter(filename="setup.exe").exists()
    assert Build.objects.filter(document=attachment, refused=[]).exists()

    # The message's text is found by a search (no filters): its score passes the floor.
    answer = cast.viewer.post("/api/search", {"query": "refund damaged parcel original card"}, format="json").json()
    (found,) = [r for r in answer["results"] if r["chunk_id"] == str(body.pk)]
    assert_clears(found["score"], answer["floor"], what="the message's body")


def test_an_attachment_that_cannot_be_read_does_not_fail_its_message(cast, collection, upload):
    content = eml_bytes(attachments=[("scan.pdf", b"%PDF-1.7\n not really a pdf", "application/pdf")])

    message = Document.objects.get(pk=upload(cast.editor, collection, "m.eml", content).json()["document_id"])

    assert message.status == "done", message.error
    broken = Document.objects.get(parent=message)
    assert broken.status == "error"
    assert "scan.pdf" in broken.error


def test_an_html_only_body_is_read_as_text_and_inline_images_are_not_attachments(tmp_path: Path):
    message = EmailMessage()
    message["Subject"] = "Fwd: Rack move"
    message["From"] = "ops@example.com"
    message.set_content(
        f"<html><head><style>p {{color: red}}</style></head><body><p>Hello,</p><p>{RACK}</p>"
        '<img src="cid:logo@x"></body></html>',
        subtype="html",
    )
    message.add_related(b"\x89PNG\r\n\x1a\nlogo", maintype="image", subtype="png", cid="<logo@x>")
    (tmp_path / "m.eml").write_bytes(message.as_bytes())

    result = parse_email(tmp_path / "m.eml", ".eml", {})

    assert [b.text for b in result.blocks] == ["Fwd: Rack move", "Hello,", RACK]
    assert result.attachments == []
    assert "color" not in " ".join(b.text for b in result.blocks)
    # No Message-ID nor References: the conversation is known by its subject, prefixes dropped.
    assert result.metadata["thread"] == "subject:rack move"


def test_an_outlook_msg_is_read_with_its_attachments(cast, collection, upload):
    # python-oxmsg reads .msg; nothing writes them, so tests/files/msg.py builds a real
    # compound file per MS-CFB and MS-OXMSG (extract-msg reads it the same way).
    content = msg_bytes(
        MsgSpec(
            subject="Re: Server move",
            body=f"Hi team,\n\n{RACK}\n\nBob",
            sender_name="Bob Builder",
            sender_address="Bob@example.com",
            sent=dt.datetime(2026, 3, 4, 9, 30, tzinfo=dt.UTC),
            recipients=[MsgRecipient("Ada", "ada@example.com")],
            attachments=[
                MsgAttachment("rack.txt", b"Rack twelve is reserved for the database servers.\n", "text/plain"),
                MsgAttachment("tool.exe", b"MZ\x90\x00"),
            ],
            message_id="move-1@example.com",
        )
    )

    response = upload(cast.editor, collection, "move.msg", content)

    message = Document.objects.get(pk=response.json()["document_id"])
    assert message.status == "done", message.error
    assert message.metadata == {
        "author": "bob@example.com",
        "created": "2026-03-04T09:30:00+00:00",
        "subject": "Re: Server move",
        "recipients": ["ada@example.com"],
        "thread": "move-1@example.com",
    }
    assert Chunk.objects.get(document=message, text__contains="rack twelve").section == ["Re: Server move"]
    attachment = Document.objects.get(parent=message)
    assert (attachment.filename, attachment.status) == ("rack.txt", "done")
    assert [w for w in message.warnings if "tool.exe" in w]
