"""The words Copydesk writes on the code host: commit messages, pull-request bodies and comments."""

import enum
import re
from dataclasses import dataclass, field

TRAILER_JOB = "Copydesk-Job"
TRAILER_MESSAGE = "Copydesk-Message"
_MAX_TITLE = 72
# Copydesk's part of a pull request's description lies between these; the rest is people's and is kept.
DESCRIPTION_START = "<!-- copydesk:description:start -->"
DESCRIPTION_END = "<!-- copydesk:description:end -->"
_OLD_FOOTER = "<sub>Opened by Copydesk for job `"


def fallback_title(prompt: str) -> str:
    """A pull-request title made from the prompt when the agent gave none."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else "Documentation update"
    return _clip(f"Docs: {first_line}", _MAX_TITLE)


def commit_message(title: str, summary: str, *, job_id: str, message_id: str, co_author: str | None = None) -> str:
    """A commit message whose trailers let a retried run recognise its own earlier push."""
    trailers = [f"{TRAILER_JOB}: {job_id}", f"{TRAILER_MESSAGE}: {message_id}"]
    if co_author:
        trailers.append(f"Co-authored-by: {co_author}")
    body = summary.strip()
    return f"{_clip(title, _MAX_TITLE)}\n\n" + (f"{body}\n\n" if body else "") + "\n".join(trailers) + "\n"


def parse_commit_message(text: str) -> tuple[str, str]:
    """The (title, summary) a `commit_message` was made of."""
    lines = text.strip().splitlines()
    title = lines[0] if lines else ""
    rest = [line for line in lines[1:] if not re.match(r"^[A-Za-z-]+: ", line)]
    return title, "\n".join(rest).strip()


NO_CHANGE_NEEDED = "No change was needed"


def round_summary(summary: str, *, no_change_needed: bool) -> str:
    """A round's summary as the pull request shows it: a round that found no change needed says so, then why."""
    if no_change_needed:
        return f"**{NO_CHANGE_NEEDED}.** {summary.strip()}".rstrip()
    return summary


def pull_body(
    *,
    rounds: list[tuple[str, str]],
    files: list[tuple[str, str]],
    docs_check: str | None,
    job_id: str,
    sources: list[list[dict]] | None = None,
) -> str:
    """Copydesk's marked section of the pull request's description: what was asked, what each round did, the
    source changes the rounds cover (an automation's job), which files the branch changes against the base, and
    the latest docs check.

    `rounds` is (request, summary) per run of the job, oldest first; the first request is the job's prompt. A
    round that needed no change has its summary made by `round_summary`. `sources` is, per round in the same
    order, the refs of the source changes it covers (service.automations).
    """
    covers = list(sources or []) + [[]] * (len(rounds) - len(sources or []))
    (request, summary), follow_ups = rounds[0], rounds[1:]
    parts = ["## Request", _quote(request), "## Summary", summary.strip() or "(no summary)"]
    if follow_ups:
        parts.append("## Follow-ups")
        parts += [
            f"**Round {n}.** "
            + (f"Covers {_change_list(covers[n - 1])}.\n\n" if covers[n - 1] else "")
            + f"{_quote(_clip(asked, 500))}\n\n{answer.strip() or '(no summary)'}"
            for n, (asked, answer) in enumerate(follow_ups, start=2)
        ]
    timeline = [f"- Round {n}: {_change_line(ref)}" for n, refs in enumerate(covers, start=1) for ref in refs]
    if timeline:
        parts += ["## Source changes", "\n".join(timeline)]
    file_lines = "\n".join(f"- `{path}` ({status})" for status, path in files) or "- (none)"
    parts += ["## Files changed", file_lines]
    if docs_check:
        parts += ["## Docs check", docs_check.strip()]
    rounds_so_far = f"{len(rounds)} round" + ("s" if len(rounds) != 1 else "")
    parts.append(
        f"<sub>Opened by Copydesk for job `{job_id}` ({rounds_so_far} so far). Comment on this pull "
        "request to ask for changes; text outside this section is yours and is kept.</sub>"
    )
    return f"{DESCRIPTION_START}\n" + "\n\n".join(parts) + f"\n{DESCRIPTION_END}\n"


def merge_description(current: str | None, section: str) -> str:
    """The description with Copydesk's marked `section` put in place of its previous one; a person's text
    outside the markers is kept as they wrote it."""
    current = (current or "").replace("\r\n", "\n")
    start, end = current.find(DESCRIPTION_START), current.find(DESCRIPTION_END)
    if start != -1 and end > start:
        return current[:start] + section.rstrip("\n") + current[end + len(DESCRIPTION_END) :]
    if not current.strip() or _OLD_FOOTER in current:
        return section  # empty, or all Copydesk's from before the section had markers
    # The markers were removed: the person's text stays on top, Copydesk's section goes below it.
    return current.rstrip() + "\n\n" + section


class RoundState(str, enum.Enum):
    """Where a round is, as its tracking comment says."""

    QUEUED = "queued"
    WORKING = "working"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass
class RoundReport:
    """What a round's tracking comment shows."""

    round_number: int  # 1 for the job's first round
    state: RoundState
    request: str = ""
    steps: str = ""  # "read 3 files, edited `docs/x.md`"
    summary: str = ""
    commit: str | None = None
    changed_files: list[str] = field(default_factory=list)
    docs_check: str | None = None
    error: dict | None = None
    no_change_needed: bool = False  # the agent found the request needs no change; `summary` says why


_STATE_WORDS = {
    RoundState.QUEUED: "⏳ queued",
    RoundState.WORKING: "🛠️ working",
    RoundState.DONE: "✅ done",
    RoundState.FAILED: "❌ failed",
    RoundState.CANCELLED: "⏹️ cancelled",
}


def tracking_comment(report: RoundReport) -> str:
    """The one comment of a round, as it reads in `report.state`."""
    parts = [f"**Round {report.round_number}** · {_STATE_WORDS[report.state]}"]
    if report.request:
        parts.append(_quote(_clip(report.request, 300)))
    if report.state is RoundState.QUEUED:
        parts.append("Waiting for its turn: the job runs one round at a time.")
    elif report.state is RoundState.WORKING:
        parts.append(f"So far: {report.steps}." if report.steps else "Started.")
    elif report.state is RoundState.DONE:
        if report.commit:
            parts.append(f"Pushed {report.commit[:12]}.")
        if report.no_change_needed:
            parts.append(round_summary(report.summary, no_change_needed=True))
        else:
            parts.append(report.summary.strip() or (f"{NO_CHANGE_NEEDED}." if not report.commit else "(no summary)"))
        if report.changed_files:
            parts.append("Files changed in this round:\n" + "\n".join(f"- `{p}`" for p in report.changed_files))
        if report.docs_check:
            parts.append("Docs check:\n" + report.docs_check.strip())
    elif report.state is RoundState.FAILED:
        error = report.error or {}
        parts.append(
            f"This round failed and changed nothing: {error.get('message', '')} "
            f"(`{error.get('code', 'error')}`).\n\nComment again to retry, or rephrase the request."
        )
    else:
        parts.append("Stopped on request; nothing of this round was pushed.")
    return "\n\n".join(parts)


def round_reply(
    *,
    mention: str,
    round_number: int,
    state: RoundState,
    summary: str = "",
    error: dict | None = None,
    no_change_needed: bool = False,
) -> str:
    """The short reply at a round's end (edits notify nobody): who asked, and how it ended in one line."""
    if state is RoundState.FAILED:
        return f"@{mention} round {round_number} failed: {_clip((error or {}).get('message', ''), 200)}"
    first = summary.strip().splitlines()[0] if summary.strip() else "done"
    if no_change_needed:
        return f"@{mention} round {round_number} needed no change: {_clip(first, 200)}"
    return f"@{mention} round {round_number} is done: {_clip(first, 200)}"


def thread_reply(*, mention: str | None, commit: str | None, summary: str, no_change_needed: bool = False) -> str:
    """The answer in a line comment's own thread: the commit that addressed it, or the words that answer it."""
    greeting = f"@{mention} " if mention else ""
    if commit:
        return f"{greeting}Addressed in {commit[:12]}: {_clip(summary, 600) or 'see the pull request.'}"
    if no_change_needed:
        return f"{greeting}{NO_CHANGE_NEEDED}: {summary.strip()}"
    return f"{greeting}{summary.strip() or NO_CHANGE_NEEDED + '.'}"


def source_comment(pull_url: str, *, automation_name: str) -> str:
    """The comment on a source pull request that links the docs pull request an automation opened for it."""
    return (
        f"📝 The docs for this change are proposed in {pull_url} (Copydesk automation "
        f"{_code(_clip(automation_name, 100))}). Reviews there are welcome."
    )


def _change_line(ref: dict) -> str:
    """One source change of the timeline: its link, its title and its author (as text: no one is mentioned)."""
    parts = [_change_link(ref), _code(_clip(ref.get("title") or "", 120))]
    if ref.get("author"):
        parts.append(f"by {_code(ref['author'])}")
    return " ".join(part for part in parts if part)


def _change_list(refs: list[dict]) -> str:
    return ", ".join(_change_link(ref) for ref in refs)


def _change_link(ref: dict) -> str:
    """`owner/name#12` (a pull request) or `name@sha` (a commit), linked when it has a web address."""
    repository = str(ref.get("repository") or "")
    ident = str(ref.get("id") or "")
    label = (
        f"{repository}#{ident}"
        if ref.get("kind") == "pull_request"
        else f"{repository.rstrip('/').rsplit('/', 1)[-1]}@{ident[:12]}"
    )
    url = str(ref.get("url") or "")
    if re.match(r"^https?://[^\s()<>]+$", url):
        return f"[{_escape_link_text(label)}]({url})"
    return _code(label)


def _escape_link_text(text: str) -> str:
    return re.sub(r"([\\\[\]])", r"\\\1", text)


def _code(text: str) -> str:
    """Text from other people as an inline code span: no markdown, links or mentions of its own."""
    text = " ".join(text.replace("`", "'").split())
    return f"`{text}`" if text else ""


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.strip().splitlines())


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
