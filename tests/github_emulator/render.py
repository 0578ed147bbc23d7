"""GitHub's JSON shapes for the emulator's records: the REST representations and the webhook ones."""

import base64
from datetime import UTC, datetime

from tests.github_emulator.app import TestApp
from tests.github_emulator.state import (
    REACTIONS,
    ROLE_PERMISSION,
    Comment,
    GitCommit,
    Installation,
    Pull,
    Reaction,
    Repo,
    Review,
    State,
    iso,
)

# Repository URL fields and their templates under the repository's API URL (as GitHub lists them).
REPO_URLS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}
USER_URLS = {
    "followers_url": "/followers",
    "following_url": "/following{/other_user}",
    "gists_url": "/gists{/gist_id}",
    "starred_url": "/starred{/owner}{/repo}",
    "subscriptions_url": "/subscriptions",
    "organizations_url": "/orgs",
    "repos_url": "/repos",
    "events_url": "/events{/privacy}",
    "received_events_url": "/received_events",
}


def node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"0:{kind}{number}".encode()).decode().rstrip("=")


class Renderer:
    """Turns records into GitHub's JSON; `base` is the emulator's URL (API and web share it)."""

    def __init__(self, state: State, app: TestApp, base: str) -> None:
        self.state, self.app, self.base = state, app, base

    # -- people and apps ---------------------------------------------------------------------

    def user(self, login: str | None) -> dict | None:
        if login is None:
            return None
        user = self.state.user(login)
        url = f"{self.base}/users/{user.login}"
        shape = {
            "login": user.login,
            "id": user.id,
            "node_id": node_id(user.type, user.id),
            "avatar_url": f"{self.base}/avatars/u/{user.id}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": f"{self.base}/{user.login}",
            "type": user.type,
            "user_view_type": "public",
            "site_admin": False,
        }
        return shape | {key: url + suffix for key, suffix in USER_URLS.items()}

    def authenticated_user(self, login: str) -> dict:
        """`GET /user` for a user-to-server token: the private-user shape."""
        user = self.state.user(login)
        return self.user(login) | {
            "name": user.login.title(),
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "private_gists": 0,
            "total_private_repos": 0,
            "owned_private_repos": 0,
            "disk_usage": 0,
            "collaborators": 0,
            "two_factor_authentication": True,
        }

    def membership(self, org: str, login: str, role: str) -> dict:
        """`GET /user/memberships/orgs/{org}`: an active membership with its role."""
        org_login = self.state.user(org, "Organization").login
        return {
            "url": f"{self.base}/orgs/{org_login}/memberships/{login}",
            "state": "active",
            "role": role,
            "organization_url": f"{self.base}/orgs/{org_login}",
            "organization": self.organization(org_login),
            "user": self.user(login),
            "permissions": {"can_create_repository": role == "admin"},
        }

    def app_json(self, installations_count: int | None = None) -> dict:
        shape = {
            "id": self.app.id,
            "slug": self.app.slug,
            "node_id": node_id("Integration", self.app.id),
            "client_id": self.app.client_id,
            "owner": self.user(self.app.owner),
            "name": self.app.name,
            "description": "Documentation agent jobs (test app)",
            "external_url": self.base,
            "html_url": f"{self.base}/apps/{self.app.slug}",
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "permissions": dict(self.app.permissions),
            "events": list(self.app.events),
        }
        if installations_count is not None:
            shape["installations_count"] = installations_count
        return shape

    def installation(self, inst: Installation) -> dict:
        account = self.state.user(inst.account)
        return {
            "id": inst.id,
            "client_id": self.app.client_id,
            "account": self.user(inst.account),
            "repository_selection": inst.selection,
            "access_tokens_url": f"{self.base}/app/installations/{inst.id}/access_tokens",
            "repositories_url": f"{self.base}/installation/repositories",
            "html_url": f"{self.base}/organizations/{inst.account}/settings/installations/{inst.id}",
            "app_id": self.app.id,
            "app_slug": self.app.slug,
            "target_id": account.id,
            "target_type": account.type,
            "permissions": dict(inst.permissions),
            "events": list(inst.events),
            "created_at": iso(inst.created_at),
            "updated_at": iso(inst.created_at),
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": self.user(inst.suspended_by),
            "suspended_at": iso(inst.suspended_at),
        }

    def organization(self, login: str) -> dict:
        org = self.state.user(login)
        url = f"{self.base}/orgs/{org.login}"
        return {
            "login": org.login,
            "id": org.id,
            "node_id": node_id("Organization", org.id),
            "url": url,
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events",
            "hooks_url": f"{url}/hooks",
            "issues_url": f"{url}/issues",
            "members_url": f"{url}/members{{/member}}",
            "public_members_url": f"{url}/public_members{{/member}}",
            "avatar_url": f"{self.base}/avatars/u/{org.id}?v=4",
            "description": None,
        }

    # -- repositories ------------------------------------------------------------------------

    def repository(self, repo: Repo, *, full: bool = False) -> dict:
        """A superset of `repository` and `repository-webhooks`; `full` adds what only `full-repository` has
        (webhooks type a repository's `organization` as a string, so it appears only there)."""
        url = f"{self.base}/repos/{repo.full_name}"
        html = f"{self.base}/{repo.full_name}"
        open_count = sum(1 for p in self.state.pulls_of(repo.id) if p.state == "open")
        stamp = iso(repo.created_at)
        shape = {
            "id": repo.id,
            "node_id": node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "owner": self.user(repo.owner),
            "private": repo.private,
            "visibility": "private" if repo.private else "public",
            "html_url": html,
            "description": None,
            "fork": False,
            "url": url,
            "git_url": f"git:{html[len('http:') :]}.git",
            "ssh_url": f"git@127.0.0.1:{repo.full_name}.git",
            "clone_url": f"{html}.git",
            "svn_url": html,
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "size": 0,
            "default_branch": repo.default_branch,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers": 0,
            "watchers_count": 0,
            "network_count": 0,
            "subscribers_count": 0,
            "open_issues": open_count,
            "open_issues_count": open_count,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": False,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "license": None,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "allow_merge_commit": True,
            "allow_squash_merge": True,
            "allow_rebase_merge": True,
            "allow_auto_merge": False,
            "allow_update_branch": False,
            "delete_branch_on_merge": repo.delete_branch_on_merge,
            "custom_properties": {},
            "pushed_at": stamp,
            "created_at": stamp,
            "updated_at": stamp,
            "permissions": {"admin": False, "maintain": False, "push": False, "triage": False, "pull": True},
        }
        if full and self.state.user(repo.owner).type == "Organization":
            shape["organization"] = self.user(repo.owner)
        return shape | {key: url + suffix for key, suffix in REPO_URLS.items()}

    @staticmethod
    def repository_brief(repo: Repo) -> dict:
        """The short form installation events list."""
        return {
            "id": repo.id,
            "node_id": node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
        }

    def collaborator_permission(self, repo: Repo, login: str) -> dict:
        role = repo.roles.get(login.lower(), "none")
        levels = list(ROLE_PERMISSION)[::-1]  # none, read, triage, write, maintain, admin
        rank = levels.index(role)
        user = self.user(login) | {
            "role_name": role,
            "permissions": {
                "pull": rank >= levels.index("read"),
                "triage": rank >= levels.index("triage"),
                "push": rank >= levels.index("write"),
                "maintain": rank >= levels.index("maintain"),
                "admin": role == "admin",
            },
        }
        return {"permission": ROLE_PERMISSION[role], "role_name": role, "user": user}

    # -- commits -----------------------------------------------------------------------------

    def commit(self, repo: Repo, commit: GitCommit) -> dict:
        """The `commit` shape; `author` and `committer` are null, as GitHub's are for emails it links to no
        account, and every commit is unsigned."""
        api, html = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}"

        def person(name: str, email: str, date: str) -> dict:
            return {"name": name, "email": email, "date": utc(date)}

        return {
            "url": f"{api}/commits/{commit.sha}",
            "sha": commit.sha,
            "node_id": node_id("Commit", int(commit.sha[:8], 16)),
            "html_url": f"{html}/commit/{commit.sha}",
            "comments_url": f"{api}/commits/{commit.sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{commit.sha}",
                "author": person(commit.author_name, commit.author_email, commit.author_date),
                "committer": person(commit.committer_name, commit.committer_email, commit.committer_date),
                "message": commit.message,
                "comment_count": 0,
                "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
                "verification": {
                    "verified": False,
                    "reason": "unsigned",
                    "signature": None,
                    "payload": None,
                    "verified_at": None,
                },
            },
            "author": None,
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"} for p in commit.parents
            ],
        }

    def comparison(
        self,
        repo: Repo,
        basehead: str,
        *,
        base: GitCommit,
        head: str,
        merge_base: GitCommit,
        commits: list[GitCommit],
        ahead_by: int,
        behind_by: int,
    ) -> dict:
        """The `commit-comparison` shape, without the optional `files` list."""
        api, html = f"{self.base}/repos/{repo.full_name}", f"{self.base}/{repo.full_name}"
        status = (
            "identical"
            if not (ahead_by or behind_by)
            else "ahead"
            if not behind_by
            else "behind"
            if not ahead_by
            else "diverged"
        )
        return {
            "url": f"{api}/compare/{basehead}",
            "html_url": f"{html}/compare/{basehead}",
            "permalink_url": f"{html}/compare/{repo.owner}:{base.sha[:7]}...{repo.owner}:{head[:7]}",
            "diff_url": f"{html}/compare/{basehead}.diff",
            "patch_url": f"{html}/compare/{basehead}.patch",
            "base_commit": self.commit(repo, base),
            "merge_base_commit": self.commit(repo, merge_base),
            "status": status,
            "ahead_by": ahead_by,
            "behind_by": behind_by,
            "total_commits": ahead_by,
            "commits": [self.commit(repo, c) for c in commits],
        }

    # -- pull requests -----------------------------------------------------------------------

    def pull(self, pull: Pull) -> dict:
        """A superset of `pull-request`, `pull-request-simple` and `pull-request-webhook`."""
        repo = self.state.repo_by_id(pull.repo_id)
        api = f"{self.base}/repos/{repo.full_name}"
        url, html = f"{api}/pulls/{pull.number}", f"{self.base}/{repo.full_name}/pull/{pull.number}"
        issue_url = f"{api}/issues/{pull.number}"
        review_comments = self.state.comments_on(pull.repo_id, pull.number, "review")
        conversation = self.state.comments_on(pull.repo_id, pull.number, "issue")

        def side(branch: str, sha: str) -> dict:
            return {
                "label": f"{repo.owner}:{branch}",
                "ref": branch,
                "sha": sha,
                "user": self.user(repo.owner),
                "repo": self.repository(repo),
            }

        links = {
            "self": url,
            "html": html,
            "issue": issue_url,
            "comments": f"{issue_url}/comments",
            "review_comments": f"{url}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{url}/commits",
            "statuses": f"{api}/statuses/{pull.head_sha}",
        }
        return {
            "url": url,
            "id": pull.id,
            "node_id": node_id("PullRequest", pull.id),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": issue_url,
            "commits_url": links["commits"],
            "review_comments_url": links["review_comments"],
            "review_comment_url": links["review_comment"],
            "comments_url": links["comments"],
            "statuses_url": links["statuses"],
            "number": pull.number,
            "state": pull.state,
            "locked": False,
            "title": pull.title,
            "user": self.user(pull.user),
            "body": pull.body,
            "labels": [],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": iso(pull.created_at),
            "updated_at": iso(pull.updated_at or pull.created_at),
            "closed_at": iso(pull.closed_at),
            "merged_at": iso(pull.merged_at),
            "merge_commit_sha": pull.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [self.user(login) for login in pull.requested_reviewers],
            "requested_teams": [],
            "head": side(pull.head, pull.head_sha),
            "base": side(pull.base, pull.base_sha),
            "_links": {name: {"href": href} for name, href in links.items()},
            "author_association": self.association(repo, pull.user),
            "auto_merge": None,
            "draft": pull.draft,
            "merged": pull.merged_at is not None,
            "mergeable": None if pull.state == "closed" else True,
            "rebaseable": None if pull.state == "closed" else True,
            "mergeable_state": "unknown" if pull.state == "closed" else "clean",
            "merged_by": self.user(pull.merged_by),
            "comments": len(conversation),
            "review_comments": len(review_comments),
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": 0,
            "deletions": 0,
            "changed_files": 0,
            "allow_auto_merge": False,
            "allow_update_branch": False,
            "delete_branch_on_merge": repo.delete_branch_on_merge,
            "use_squash_pr_title_as_default": False,
        }

    def pull_as_issue(self, pull: Pull) -> dict:
        """The pull request as an issue (what `issue_comment` events carry)."""
        shaped = self.pull(pull)
        api = f"{self.base}/repos/{self.state.repo_by_id(pull.repo_id).full_name}"
        keep = (
            "url",
            "html_url",
            "number",
            "state",
            "locked",
            "title",
            "user",
            "body",
            "labels",
            "milestone",
            "active_lock_reason",
            "created_at",
            "updated_at",
            "closed_at",
            "assignee",
            "assignees",
            "author_association",
            "draft",
            "comments",
        )
        issue = {key: shaped[key] for key in keep}
        issue.update(
            url=shaped["issue_url"],
            id=pull.id + 500000,
            node_id=node_id("Issue", pull.id),
            html_url=shaped["html_url"],
            repository_url=api,
            labels_url=f"{shaped['issue_url']}/labels{{/name}}",
            comments_url=shaped["comments_url"],
            events_url=f"{shaped['issue_url']}/events",
            timeline_url=f"{shaped['issue_url']}/timeline",
            performed_via_github_app=None,
            state_reason=None,
            reactions=self.reaction_rollup(("issue", pull.id), f"{shaped['issue_url']}/reactions"),
            pull_request={
                "url": shaped["url"],
                "html_url": shaped["html_url"],
                "diff_url": shaped["diff_url"],
                "patch_url": shaped["patch_url"],
                "merged_at": shaped["merged_at"],
            },
        )
        return issue

    def association(self, repo: Repo, login: str) -> str:
        if login.lower() == repo.owner.lower():
            return "OWNER"
        return "COLLABORATOR" if repo.roles.get(login.lower(), "none") != "none" else "NONE"

    # -- comments, reviews, reactions --------------------------------------------------------

    def issue_comment(self, comment: Comment) -> dict:
        repo = self.state.repo_by_id(comment.repo_id)
        api = f"{self.base}/repos/{repo.full_name}"
        url = f"{api}/issues/comments/{comment.id}"
        return {
            "id": comment.id,
            "node_id": node_id("IssueComment", comment.id),
            "url": url,
            "html_url": f"{self.base}/{repo.full_name}/pull/{comment.number}#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{comment.number}",
            "body": comment.body,
            "user": self.user(comment.user),
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at or comment.created_at),
            "author_association": self.association(repo, comment.user),
            "performed_via_github_app": self.app_json() if comment.via_app else None,
            "reactions": self.reaction_rollup(("issue_comment", comment.id), f"{url}/reactions"),
        }

    def review_comment(self, comment: Comment) -> dict:
        repo = self.state.repo_by_id(comment.repo_id)
        api = f"{self.base}/repos/{repo.full_name}"
        url = f"{api}/pulls/comments/{comment.id}"
        html = f"{self.base}/{repo.full_name}/pull/{comment.number}#discussion_r{comment.id}"
        pull_url = f"{api}/pulls/{comment.number}"
        shape = {
            "url": url,
            "id": comment.id,
            "node_id": node_id("PullRequestReviewComment", comment.id),
            "pull_request_review_id": comment.review_id,
            "diff_hunk": f"@@ -{comment.line} +{comment.line} @@",
            "path": comment.path,
            "position": 1,
            "original_position": 1,
            "commit_id": comment.commit_id,
            "original_commit_id": comment.commit_id,
            "user": self.user(comment.user),
            "body": comment.body,
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.created_at),
            "html_url": html,
            "pull_request_url": pull_url,
            "author_association": self.association(repo, comment.user),
            "_links": {"self": {"href": url}, "html": {"href": html}, "pull_request": {"href": pull_url}},
            "start_line": None,
            "original_start_line": None,
            "start_side": None,
            "line": comment.line,
            "original_line": comment.line,
            "side": "RIGHT",
            "subject_type": "line",
            "performed_via_github_app": self.app_json() if comment.via_app else None,
            "reactions": self.reaction_rollup(("review_comment", comment.id), f"{url}/reactions"),
        }
        if comment.in_reply_to is not None:
            shape["in_reply_to_id"] = comment.in_reply_to
        return shape

    def review(self, review: Review, *, rest: bool = False) -> dict:
        """The webhook shape; `rest` gives the REST one, whose state is upper case ("CHANGES_REQUESTED")."""
        repo = self.state.repo_by_id(review.repo_id)
        html = f"{self.base}/{repo.full_name}/pull/{review.number}#pullrequestreview-{review.id}"
        pull_url = f"{self.base}/repos/{repo.full_name}/pulls/{review.number}"
        return {
            "id": review.id,
            "node_id": node_id("PullRequestReview", review.id),
            "user": self.user(review.user),
            "body": review.body,
            "commit_id": review.commit_id,
            "submitted_at": iso(review.submitted_at),
            "updated_at": iso(review.submitted_at),
            "state": review.state.upper() if rest else review.state,
            "html_url": html,
            "pull_request_url": pull_url,
            "author_association": self.association(repo, review.user),
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
        }

    def reaction(self, reaction: Reaction) -> dict:
        return {
            "id": reaction.id,
            "node_id": node_id("Reaction", reaction.id),
            "user": self.user(reaction.user),
            "content": reaction.content,
            "created_at": iso(reaction.created_at),
        }

    def reaction_rollup(self, subject: tuple, url: str) -> dict:
        contents = [r.content for r in self.state.reactions if r.subject == subject]
        return {"url": url, "total_count": len(contents)} | {name: contents.count(name) for name in REACTIONS}


def utc(stamp: str) -> str:
    """git's ISO 8601 date with an offset, as GitHub writes dates: UTC, to the second, with a Z."""
    return datetime.fromisoformat(stamp).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
