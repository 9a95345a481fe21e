"""CSV downloads that stream row by row and that no spreadsheet runs as formulas."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence

from django.http import StreamingHttpResponse

# A spreadsheet reads a cell that starts with one of these as a formula (OWASP's list).
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A value as a cell no spreadsheet runs: text that could start a formula gets a
    leading apostrophe, which spreadsheets show as plain text."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS):
        return "'" + value
    return value


class _Echo:
    """csv.writer writes into this and gets the line back, so rows stream one by one."""

    def write(self, value: str) -> str:
        return value


def csv_download(
    header: Sequence[str], rows: Iterable[Sequence[object]], filename: str
) -> StreamingHttpResponse:
    """A streamed ``text/csv`` attachment: the header, then each row with its cells guarded."""
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow([csv_cell(value) for value in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
