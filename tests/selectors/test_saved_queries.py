"""What a user sees of the saved queries: their own and the shared ones, by name, bounded."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from claims.models import SavedQuery
from claims.selectors.saved_queries import saved_queries_for, saved_query_get
from tests import factories

pytestmark = pytest.mark.django_db


def keep(owner, name, list_name="claims", shared=False):
    return SavedQuery.objects.create(
        owner=owner,
        name=name,
        list_name=list_name,
        query='state = "live"',
        shared=shared,
        created_at_ms=1,
        updated_at_ms=1,
    )


def names(rows):
    return [row.name for row in rows]


def test_a_user_sees_their_own_and_the_shared_ones_of_one_list_by_name(
    django_assert_num_queries,
):
    alice, bob = factories.make_user("alice"), factories.make_user("bob")
    keep(alice, "b-own")
    keep(alice, "c-own-shared", shared=True)
    keep(bob, "a-bob-shared", shared=True)
    keep(bob, "bob-private")
    keep(alice, "workflows-own", list_name="workflows")

    with django_assert_num_queries(1):  # the owners come with the rows
        rows = saved_queries_for(alice, "claims")
        owners = [row.owner.username for row in rows]

    assert names(rows) == ["a-bob-shared", "b-own", "c-own-shared"]
    assert owners == ["bob", "alice", "alice"]
    assert names(saved_queries_for(bob, "claims")) == [
        "a-bob-shared",
        "bob-private",
        "c-own-shared",
    ]
    assert names(saved_queries_for(alice, None)) == [
        "a-bob-shared",
        "b-own",
        "c-own-shared",
        "workflows-own",
    ]
    assert names(saved_queries_for(AnonymousUser(), "claims")) == []


def test_the_list_is_bounded():
    alice = factories.make_user("alice")
    for n in range(5):
        keep(alice, f"q{n}")

    assert names(saved_queries_for(alice, "claims", limit=3)) == ["q0", "q1", "q2"]


def test_another_users_private_query_is_not_found():
    alice, bob = factories.make_user("alice"), factories.make_user("bob")
    private = keep(alice, "mine")
    shared = keep(alice, "ours", shared=True)

    assert saved_query_get(bob, shared.pk) == shared
    assert saved_query_get(alice, private.pk) == private
    with pytest.raises(SavedQuery.DoesNotExist):
        saved_query_get(bob, private.pk)
