"""The claims and workflows pages take a query in the URL: it selects the rows, a query not
understood is shown back with a caret under the place and the reason (400, nothing listed),
and the dropdown filters can be turned into query text to edit."""

from __future__ import annotations

import html as html_text
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from .conftest import make_claim, make_engine, make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows():
    make_engine("e-3", name="engine3@host-a")
    make_workflow("order-1", workflow_type="order")
    make_claim("order-1", engine="e-3", expires_in_ms=-600_000)  # expired
    make_workflow("invoice-1", workflow_type="invoice")
    make_claim("invoice-1", engine=None)  # stranded
    make_workflow("invoice-2", workflow_type="invoice", status="completed")
    make_claim("invoice-2", engine=None)  # ownerless, finished


def page(client, path: str, **params: str):
    return client.get(f"{path}?{urlencode(params)}")


def test_the_claims_page_lists_what_the_query_selects(viewer_client, rows):
    response = page(viewer_client, "/claims/", query='type = "invoice"')
    text = response.content.decode()
    assert response.status_code == 200
    # Under a query the query decides: the finished invoice shows beside the stranded one.
    assert "invoice-1" in text
    assert "invoice-2" in text
    assert "order-1" not in text
    assert 'value="type = &quot;invoice&quot;"' in text  # kept in the box


def test_the_workflows_page_lists_what_the_query_selects(viewer_client, rows):
    text = page(viewer_client, "/workflows/", query='engine = "engine3@host-a"').content.decode()
    assert "order-1" in text
    assert "invoice-1" not in text


@pytest.mark.parametrize("path", ["/claims/", "/workflows/"])
def test_a_query_not_understood_is_shown_with_a_caret_and_why(viewer_client, rows, path):
    response = page(viewer_client, path, query='type = "order" AND colour = "red"')
    text = response.content.decode()
    assert response.status_code == 400
    assert 'role="alert"' in text
    assert "unknown field &#x27;colour&#x27;" in text
    typed = "type = &quot;order&quot; AND colour = &quot;red&quot;\n"
    assert typed + " " * 19 + "^</pre>" in text
    assert "order-1" not in text  # nothing listed under it


def test_the_claims_dropdowns_become_a_query_to_edit(viewer_client, rows):
    text = page(viewer_client, "/claims/", state="expired", engine="e-3").content.decode()
    link = text.split("Edit these filters as a query")[0].rsplit('href="', 1)[1].split('"')[0]
    query = parse_qs(urlsplit(html_text.unescape(link)).query)["query"][0]
    assert query == 'state = "expired" AND engine = "e-3"'
    # Followed, it shows the same rows.
    assert "order-1" in page(viewer_client, "/claims/", query=query).content.decode()


def test_the_workflows_filters_become_a_query_to_edit(viewer_client, rows):
    text = page(viewer_client, "/workflows/", type="invoice", status="running").content.decode()
    assert "Edit these filters as a query" in text
    assert urlencode({"query": 'type = "invoice" AND status = "running"'}) in text


def test_the_filters_form_carries_the_query(viewer_client, rows):
    text = page(viewer_client, "/claims/", query='type = "order"').content.decode()
    form = text.split('id="claims-filters"')[1].split("</form>")[0]
    assert '<input type="hidden" name="query" value="type = &quot;order&quot;">' in form
