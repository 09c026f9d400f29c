"""Small real files, generated: Word, HTML and PDF with headings and pages."""

from __future__ import annotations

import io
import random

import docx
from fpdf import FPDF
from PIL import Image, ImageDraw


def docx_bytes(sections: list[tuple[int, str, str]]) -> bytes:
    """sections: (heading level, heading, body paragraph)."""
    document = docx.Document()
    for level, heading, body in sections:
        document.add_heading(heading, level)
        if body:
            document.add_paragraph(body)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def html_bytes(sections: list[tuple[int, str, str]]) -> bytes:
    parts = ["<!doctype html><html><head><title>t</title></head><body>"]
    for level, heading, body in sections:
        parts.append(f"<h{level}>{heading}</h{level}>")
        if body:
            parts.append(f"<p>{body}</p>")
    parts.append("</body></html>")
    return "".join(parts).encode()


def pdf_bytes(pages: list[list[tuple[str, str]]]) -> bytes:
    """pages: list of pages, each a list of (heading, body)."""
    pdf = FPDF()
    for page in pages:
        pdf.add_page()
        for heading, body in page:
            pdf.set_font("Helvetica", "B", 18)
            pdf.multi_cell(0, 10, heading)
            pdf.ln(2)
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, body)
            pdf.ln(6)
    return bytes(pdf.output())


def scanned_pdf_bytes(pages: int) -> bytes:
    """A PDF of `pages` pages holding nothing but an image each (no text layer): what a scanner makes."""
    image = Image.new("L", (400, 120), 255)
    ImageDraw.Draw(image).text((20, 50), "Refunds are paid back within five working days.", fill=0)
    pdf = FPDF()
    for _ in range(pages):
        pdf.add_page()
        pdf.image(image, x=10, y=10, w=150)  # one image, stored once and drawn on every page
    return bytes(pdf.output())


def words(chars: int, seed: int = 5) -> str:
    """About `chars` characters of English-looking words, separated by spaces (no line break)."""
    vocabulary = ["the", "parcel", "refund", "warehouse", "customer", "returns", "within", "days", "goods"]
    rng = random.Random(seed)
    text = " ".join(rng.choice(vocabulary) for _ in range(chars // 5 + 1))
    return text[:chars].strip()


HANDBOOK = [
    (
        1,
        "Handbook",
        "This handbook explains how the shop works for customers and staff.",
    ),
    (
        2,
        "3 Returns",
        "Goods can be sent back within thirty days of purchase if they are unused.",
    ),
    (
        3,
        "3.2 Refunds",
        "Money is paid back to the original card within five working days after we receive the parcel.",
    ),
    (
        2,
        "4 Delivery",
        "Parcels leave the warehouse every weekday morning and arrive within two days.",
    ),
]
