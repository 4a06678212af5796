"""Which project a new session belongs to, and projects as files (import and export).

A session's project is named when it starts, or else the one whose repository patterns
claim its repository (`core/projects.py`), or else `default`. A person starts sessions
only in projects they belong to (as a member or reviewer); anyone may use `default`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction

from tools_app import access
from tools_app.core.projects import pattern_problem, project_for_repo
from tools_app.errors import Forbidden, Invalid, NotFound
from tools_app.models import Policy, Project
from tools_app.services.audit import Action, Via, audit_record
from tools_app.services.policies import policy_named
from tools_app.sql.prepared import Prepared
from tools_app.tables.projects import DEFAULT_PROJECT, default_project

PROJECT_KEYS = ("name", "description", "members", "reviewers", "policy", "repositories")


# One read for the choice and the chosen, with its policy (`project_policy`); compiled
# once (`sql/prepared.py`): a gateway session's first hook asks it. No ORDER BY: the
# choice sorts them itself.
_CHOICES = Prepared(
    Project,
    lambda: (
        Project.objects.select_related("policy").only("name", "repositories", "policy").order_by()
    ),
)


def project_choose(*, user: Any, repo: str, name: str = "") -> Project:
    """The project of a session `user` starts on `repo` (`name`: the one they named)."""
    if name:
        named = Project.objects.filter(name=name).first()
        if named is None or not _may_start_in(user, named):
            raise NotFound(f"There is no project named {name!r} that you may start sessions in.")
        return named
    projects = {p.name: p for p in _CHOICES.models()}
    claimed = project_for_repo(repo, ((p.name, p.repositories) for p in projects.values()))
    if claimed is None:
        return projects.get(DEFAULT_PROJECT) or default_project()
    project = projects[claimed]
    if not _may_start_in(user, project):
        raise Forbidden(
            f"The repository {repo} belongs to the project {claimed!r}: only its members "
            "and reviewers start sessions on it."
        )
    return project


def project_policy(project: Project, *, named: str = "") -> Policy:
    """The policy a session started in `project` runs under: the one `named`, else the
    project's (read with it by `project_choose`), else `default`. ServiceError when the
    one named is missing."""
    if not named and project.policy is not None:
        return project.policy
    return policy_named(named or "default")


def _may_start_in(user: Any, project: Project) -> bool:
    """`default` is everyone's; a command-line session (no user) is the operator's."""
    return project.name == DEFAULT_PROJECT or user is None or access.may_use_project(user, project)


def project_as_dict(project: Project) -> dict[str, Any]:
    """A project as a file holds it (what `export_project` prints)."""
    return {
        "name": project.name,
        "description": project.description,
        "members": sorted(group.name for group in project.members.all()),
        "reviewers": sorted(group.name for group in project.reviewers.all()),
        "policy": project.policy.name if project.policy else "",
        "repositories": list(project.repositories),
    }


@transaction.atomic
def project_import(*, data: object, user: Any = None, via: str = Via.CLI) -> Project:
    """Create or replace a project from its file; refuses a bad one whole, naming each
    problem. Groups are made when missing (an identity provider may fill them later)."""
    problems = project_problems(data)
    if problems:
        raise Invalid("The project file is not valid: " + "; ".join(problems))
    assert isinstance(data, dict)
    policy = Policy.objects.filter(name=data.get("policy") or "").first()
    project, created = Project.objects.update_or_create(
        name=data["name"],
        defaults={
            "description": data.get("description", ""),
            "policy": policy,
            "repositories": list(data.get("repositories", [])),
        },
    )
    project.members.set(_groups(data.get("members", [])))
    project.reviewers.set(_groups(data.get("reviewers", [])))
    project_changed(project=project, user=user, via=via, created=created, imported=True)
    return project


def project_changed(
    *, project: Project, user: Any, via: str, created: bool, imported: bool = False
) -> None:
    """The audit entry of a project made or changed (imported, or saved in the admin),
    with the project as it now is."""
    details = {"imported": imported, "created": created, **project_as_dict(project)}
    audit_record(
        action=Action.PROJECT_CHANGE, via=via, actor=user, object_type="project",
        object_id=project.pk, object_repr=f"project {project.name}", project=project.name,
        details=details,
    )  # fmt: skip


def _groups(names: list[str]) -> list[Group]:
    return [Group.objects.get_or_create(name=name)[0] for name in names]


def project_problems(data: object) -> list[str]:
    """Every problem with a project file's contents; empty when it can be used."""
    if not isinstance(data, dict):
        return ["a project file holds one JSON object with a `name`"]
    known = ", ".join(PROJECT_KEYS)
    problems = [f"{key}: unknown key (known: {known})" for key in data if key not in PROJECT_KEYS]
    if not _is_slug(data.get("name")):
        problems.append("name: must be a slug (letters, digits, - and _), at most 100 characters")
    for key in ("members", "reviewers"):
        if not _is_group_list(data.get(key, [])):
            problems.append(f"{key}: must be a list of group names")
    problems += _pattern_problems(data.get("repositories", []))
    policy = data.get("policy", "")
    if policy and not (isinstance(policy, str) and Policy.objects.filter(name=policy).exists()):
        problems.append(f"policy: there is no policy named {policy!r}")
    if not isinstance(data.get("description", ""), str):
        problems.append("description: must be a string")
    return problems


def _is_slug(name: object) -> bool:
    if not isinstance(name, str) or not 0 < len(name) <= 100 or not name.isascii():
        return False
    return name.replace("-", "").replace("_", "").isalnum()


def _is_group_list(groups: object) -> bool:
    if not isinstance(groups, list):
        return False
    return all(isinstance(group, str) and 0 < len(group) <= 150 for group in groups)


def _pattern_problems(patterns: object) -> list[str]:
    if not isinstance(patterns, list):
        return ["repositories: must be a list of glob patterns"]
    return [
        f"repositories[{index}]: {why}"
        for index, pattern in enumerate(patterns)
        if (why := pattern_problem(pattern))
    ]
