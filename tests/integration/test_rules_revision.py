"""A policy's `rules_revision` changes with any write to its rules, whatever makes it (the
database's triggers, migration 0027), and a spec is used again without reading the rules
only for a policy read just now, out of any transaction, while the revision holds. Run on
SQLite and PostgreSQL: the triggers are each database's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.integration.gateway_helpers import Hook
from tools_app import services
from tools_app.models import Policy, PolicyRule
from tools_app.selectors import records
from tools_app.sql import rules_revision

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
COMMITTED = pytest.mark.django_db(transaction=True, serialized_rollback=True)
RULES = PolicyRule._meta.db_table


@pytest.fixture
def policy() -> Iterator[Policy]:
    rules_revision.forget()
    made = Policy.objects.create(name="team")
    PolicyRule.objects.create(policy=made, position=0, tool="read_file", decision="allow")
    yield made
    rules_revision.forget()


def revision(policy: Policy) -> str:
    return Policy.objects.values_list("rules_revision", flat=True).get(pk=policy.pk)


def raw(sql: str, params: list[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_the_database_keeps_the_revision_after_every_migration() -> None:
    """A later migration that remakes the rules' table on SQLite drops its triggers:
    this fails until that migration makes them again."""
    rules_revision.forget()
    assert rules_revision.kept()


WRITES: dict[str, Callable[[Policy, PolicyRule], None]] = {
    "create": lambda p, r: PolicyRule.objects.create(policy=p, tool="*", decision="deny"),
    "bulk_create": lambda p, r: PolicyRule.objects.bulk_create(
        [PolicyRule(policy=p, tool="a"), PolicyRule(policy=p, tool="b")]
    ),
    "save": lambda p, r: PolicyRule.objects.get(pk=r.pk).save(),
    "queryset update (no signal)": lambda p, r: PolicyRule.objects.filter(pk=r.pk).update(
        decision="deny"
    ),
    "delete": lambda p, r: PolicyRule.objects.filter(pk=r.pk).delete(),
    "raw SQL update": lambda p, r: raw(
        f"UPDATE {RULES} SET reason = %s WHERE id = %s", ["x", r.pk]
    ),
    "raw SQL delete": lambda p, r: raw(f"DELETE FROM {RULES} WHERE id = %s", [r.pk]),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_any_write_to_a_rule_gives_its_policy_a_new_revision(policy: Policy, write: str) -> None:
    other = Policy.objects.create(name="other")
    before, untouched = revision(policy), revision(other)
    assert len(before) == 32
    WRITES[write](policy, policy.rules.get())
    assert revision(policy) not in {before, ""}
    assert revision(other) == untouched


def test_a_rule_moved_to_another_policy_changes_both(policy: Policy) -> None:
    other = Policy.objects.create(name="other")
    before = (revision(policy), revision(other))
    PolicyRule.objects.filter(policy=policy).update(policy=other)
    assert revision(policy) != before[0] and revision(other) != before[1]


def test_truncating_the_rules_gives_every_policy_a_new_revision(policy: Policy) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("TRUNCATE is PostgreSQL's (SQLite's DELETE fires the row triggers)")
    other = Policy.objects.create(name="other")
    before = (revision(policy), revision(other))
    raw("SET CONSTRAINTS ALL IMMEDIATE", [])  # no deferred check pending: TRUNCATE refuses
    raw(f"TRUNCATE {RULES}", [])
    after = (revision(policy), revision(other))
    assert after[0] not in {before[0], ""} and after[1] not in {before[1], ""}


@COMMITTED
def test_a_spec_is_used_again_without_reading_rules_until_one_changes(policy: Policy) -> None:
    def spec_of_fresh_policy() -> tuple[list[str], int]:
        fresh = Policy.objects.get(pk=policy.pk)
        with CaptureQueriesContext(connection) as queries:
            spec = records.policy_spec(fresh, just_read=True)
        return [rule.verdict for rule in spec.rules], len(queries)

    assert spec_of_fresh_policy() == (["allow"], 2)  # the triggers asked for, the rules read
    assert spec_of_fresh_policy() == (["allow"], 0)
    # Changed by raw SQL, past every signal and service: the next read sees it.
    raw(f"UPDATE {RULES} SET decision = 'deny' WHERE policy_id = %s", [policy.pk])
    assert spec_of_fresh_policy() == (["deny"], 1)
    assert spec_of_fresh_policy() == (["deny"], 0)
    # A policy not read just now (its revision may be old) has its rules read.
    with CaptureQueriesContext(connection) as queries:
        records.policy_spec(policy)
    assert len(queries) == 1


@COMMITTED
def test_rules_written_in_a_transaction_that_rolls_back_are_never_used(policy: Policy) -> None:
    """Read in a transaction, a policy's revision may be older than rules that transaction
    wrote: nothing made there is used again by its revision."""
    fresh = Policy.objects.get(pk=policy.pk)
    assert [r.verdict for r in records.policy_spec(fresh, just_read=True).rules] == ["allow"]

    class RolledBack(Exception):
        pass

    with pytest.raises(RolledBack), transaction.atomic():
        read_before = Policy.objects.get(pk=policy.pk)
        PolicyRule.objects.filter(policy=policy).update(decision="deny")
        spec = records.policy_spec(read_before, just_read=True)
        assert [r.verdict for r in spec.rules] == ["deny"]
        raise RolledBack
    again = records.policy_spec(Policy.objects.get(pk=policy.pk), just_read=True)
    assert [r.verdict for r in again.rules] == ["allow"]


@COMMITTED
def test_without_its_triggers_every_call_reads_the_rules(
    policy: Policy, caplog: pytest.LogCaptureFixture
) -> None:
    class RolledBack(Exception):
        pass

    dropped = {
        "sqlite": [f"DROP TRIGGER {name}" for name in rules_revision.TRIGGERS["sqlite"]],
        "postgresql": [f"ALTER TABLE {RULES} DISABLE TRIGGER agentweb_rules_revision"],
    }[connection.vendor]
    records.policy_spec(Policy.objects.get(pk=policy.pk), just_read=True)
    with pytest.raises(RolledBack), transaction.atomic():  # DDL rolls back on both
        for sql in dropped:
            raw(sql, [])
        rules_revision.forget()
        assert not rules_revision.kept()
        raise RolledBack
    assert "triggers missing: agentweb_rules_revision" in caplog.text
    # The answer is kept for the process: a call now reads the rules each time.
    with CaptureQueriesContext(connection) as queries:
        records.policy_spec(Policy.objects.get(pk=policy.pk), just_read=True)
    assert len(queries) == 2  # the policy, and its rules
    rules_revision.forget()
    assert rules_revision.kept()


@COMMITTED
def test_an_allowed_hook_of_an_unchanged_policy_does_not_read_its_rules(creator: User) -> None:
    hook = Hook(services.api_token_create(user=creator, scope="agent"))
    rules_revision.forget()
    assert hook.pre("Bash", {"command": "ls"})["permissionDecision"] == "allow"
    with CaptureQueriesContext(connection) as queries:
        answer = hook.pre("Bash", {"command": "ls -la"})
    assert answer["permissionDecision"] == "allow", answer
    read = [q["sql"] for q in queries.captured_queries if RULES in q["sql"]]
    assert read == [], read
    # A rule added by any path is seen by the next hook.
    default = Policy.objects.get(name="default")
    PolicyRule.objects.create(
        policy=default, position=0, tool="run_command", decision="deny", reason="no more ls"
    )
    answer = hook.pre("Bash", {"command": "ls -l"})
    assert (
        answer["permissionDecision"] == "deny"
        and "no more ls" in answer["permissionDecisionReason"]
    ), answer
