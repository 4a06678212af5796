"""Each policy's `rules_revision`, a new random value whenever one of its rules is
inserted, updated or deleted (or, on PostgreSQL, the rules' table truncated), written by
database triggers so that no path (the services, the admin, a shell, raw SQL) can change
a rule without it. The SQL is spelled out here, as this migration made it; the triggers'
names are checked for at run time (`tools_app/sql/rules_revision.py`)."""

from django.db import migrations, models

SQLITE = [
    """CREATE TRIGGER agentweb_rules_revision_insert AFTER INSERT ON tools_app_policyrule
    BEGIN UPDATE tools_app_policy SET rules_revision = lower(hex(randomblob(16))) WHERE id = NEW.policy_id; END""",
    """CREATE TRIGGER agentweb_rules_revision_update AFTER UPDATE ON tools_app_policyrule
    BEGIN UPDATE tools_app_policy SET rules_revision = lower(hex(randomblob(16)))
    WHERE id IN (OLD.policy_id, NEW.policy_id); END""",
    """CREATE TRIGGER agentweb_rules_revision_delete AFTER DELETE ON tools_app_policyrule
    BEGIN UPDATE tools_app_policy SET rules_revision = lower(hex(randomblob(16))) WHERE id = OLD.policy_id; END""",
    "UPDATE tools_app_policy SET rules_revision = lower(hex(randomblob(16)))",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS agentweb_rules_revision_insert",
    "DROP TRIGGER IF EXISTS agentweb_rules_revision_update",
    "DROP TRIGGER IF EXISTS agentweb_rules_revision_delete",
]

POSTGRES = [
    """CREATE FUNCTION agentweb_rules_revision() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            UPDATE tools_app_policy SET rules_revision = md5(random()::text || clock_timestamp()::text) WHERE id = OLD.policy_id;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            UPDATE tools_app_policy SET rules_revision = md5(random()::text || clock_timestamp()::text) WHERE id = NEW.policy_id;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER agentweb_rules_revision AFTER INSERT OR UPDATE OR DELETE
    ON tools_app_policyrule FOR EACH ROW EXECUTE FUNCTION agentweb_rules_revision()""",
    """CREATE FUNCTION agentweb_rules_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE tools_app_policy SET rules_revision = md5(random()::text || clock_timestamp()::text);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER agentweb_rules_truncated AFTER TRUNCATE ON tools_app_policyrule
    FOR EACH STATEMENT EXECUTE FUNCTION agentweb_rules_truncated()""",
    "UPDATE tools_app_policy SET rules_revision = md5(random()::text || clock_timestamp()::text)",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS agentweb_rules_revision ON tools_app_policyrule",
    "DROP TRIGGER IF EXISTS agentweb_rules_truncated ON tools_app_policyrule",
    "DROP FUNCTION IF EXISTS agentweb_rules_revision()",
    "DROP FUNCTION IF EXISTS agentweb_rules_truncated()",
]


def _run(schema_editor, statements: dict[str, list[str]]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in statements:
        raise RuntimeError(
            f"agentweb keeps policies' rules_revision on SQLite and PostgreSQL, not {vendor}"
        )
    for sql in statements[vendor]:
        schema_editor.execute(sql, params=None)


def create_triggers(apps, schema_editor) -> None:
    _run(schema_editor, {"sqlite": SQLITE, "postgresql": POSTGRES})


def drop_triggers(apps, schema_editor) -> None:
    _run(schema_editor, {"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP})


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0026_unanswered_calls_by_tool"),
    ]

    operations = [
        migrations.AddField(
            model_name="policy",
            name="rules_revision",
            field=models.CharField(blank=True, default="", editable=False, max_length=32),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
