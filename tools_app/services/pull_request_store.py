"""Pull requests recorded in agentweb (the `local` forge of create_pull_request)."""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.urls import reverse

from tools_app.core.tools.forge import Proposal, PullRequestRef
from tools_app.models import PullRequest


class PullRequestStore:
    """The LocalPullRequestStore the pull request tool writes to.

    `session_id` is the session whose tool call records the pull request: who may read
    it later follows who may see that session.
    """

    def __init__(self, session_id: int | None = None) -> None:
        self.session_id = session_id

    def find(self, repo_key: str, head: str) -> PullRequestRef | None:
        found = PullRequest.objects.filter(repo_key=repo_key, head=head).first()
        return _ref(found) if found else None

    def create(self, repo_key: str, proposal: Proposal) -> PullRequestRef:
        """Numbers count per repository; a second create for one head returns the first."""
        try:
            with transaction.atomic():
                last = PullRequest.objects.filter(repo_key=repo_key).aggregate(n=Max("number"))
                pull = PullRequest.objects.create(
                    repo_key=repo_key, number=(last["n"] or 0) + 1, title=proposal.title,
                    body=proposal.body, base=proposal.base, head=proposal.head,
                    draft=proposal.draft, commits=proposal.commits, diff=proposal.diff,
                    session_id=self.session_id,
                )  # fmt: skip
        except IntegrityError:
            existing = self.find(repo_key, proposal.head)
            if existing is None:
                raise
            return existing
        return _ref(pull)


def _ref(pull: PullRequest) -> PullRequestRef:
    path = reverse("pull_request", args=[pull.pk])
    return PullRequestRef(url=f"{settings.AGENTWEB_BASE_URL.rstrip('/')}{path}", number=pull.number)
