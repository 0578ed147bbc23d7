"""A pull request's diff as GitHub shows it, read through the REST API and capped in size."""

from dataclasses import dataclass
from urllib.parse import quote

from bot.github.client import GitHubClient

DIFF_MEDIA_TYPE = "application/vnd.github.diff"


@dataclass(frozen=True)
class PullDiff:
    text: str
    truncated: bool  # GitHub had more than the cap allowed; `text` then ends with the last whole line read


def pull_diff(client: GitHubClient, owner: str, name: str, number: int, *, max_bytes: int) -> PullDiff:
    """Pull request `number`'s diff: what its head changed since it left its base (GitHub's three-dot comparison
    in the diff media type), at most `max_bytes` of it."""
    pull = client.getitem("/repos/{owner}/{repo}/pulls/{number}", {"owner": owner, "repo": name, "number": number})
    # The head by commit: a merged or closed pull request's branch may be deleted. A merged one's base branch has
    # moved past its head, so it is compared from the base commit it was merged into; any other from its base
    # branch as it is now, as GitHub's own "Files changed" does.
    base = pull["base"]["sha"] if pull.get("merged") else pull["base"]["ref"]
    basehead = quote(f"{base}...{pull['head']['sha']}", safe="/")
    raw, truncated = client.getbytes(
        "/repos/{owner}/{repo}/compare/{+basehead}",
        {"owner": owner, "repo": name, "basehead": basehead},
        accept=DIFF_MEDIA_TYPE,
        limit=max_bytes,
    )
    return PullDiff(diff_text(raw, truncated), truncated)


def diff_text(raw: bytes, truncated: bool) -> str:
    """A diff read up to a cap as text: when it was cut, only its whole lines (no half line, nor half a UTF-8
    character, at the cut)."""
    if truncated:
        raw = raw[: raw.rfind(b"\n") + 1]
    return raw.decode("utf-8", "replace")
