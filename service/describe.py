"""The words Copydesk writes on the code host: commit messages, pull-request bodies and comments."""

import re

TRAILER_JOB = "Copydesk-Job"
TRAILER_MESSAGE = "Copydesk-Message"
_MAX_TITLE = 72


def fallback_title(prompt: str) -> str:
    """A pull-request title made from the prompt when the agent gave none."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else "Documentation update"
    return _clip(f"Docs: {first_line}", _MAX_TITLE)


def commit_message(title: str, summary: str, *, job_id: str, message_id: str,
                   co_author: str | None = None) -> str:
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


def pull_body(*, rounds: list[tuple[str, str]], files: list[tuple[str, str]], docs_check: str | None,
              job_id: str) -> str:
    """The pull request's description: what was asked, what each round did, which files, the docs check.

    `rounds` is (request, summary) per run of the job, oldest first; the first request is the job's prompt.
    """
    (request, summary), follow_ups = rounds[0], rounds[1:]
    parts = ["## Request", _quote(request), "## Summary", summary.strip() or "(no summary)"]
    if follow_ups:
        parts.append("## Follow-ups")
        parts += [f"**Round {n}.** {_quote(_clip(asked, 500))}\n\n{answer.strip() or '(no summary)'}"
                  for n, (asked, answer) in enumerate(follow_ups, start=2)]
    file_lines = "\n".join(f"- `{path}` ({status})" for status, path in files) or "- (none)"
    parts += ["## Files changed", file_lines]
    if docs_check:
        parts += ["## Docs check", docs_check.strip()]
    parts.append(f"<sub>Opened by Copydesk for job `{job_id}`. Comment on this pull request to ask for "
                 "changes.</sub>")
    return "\n\n".join(parts) + "\n"


def round_comment(*, round_number: int, summary: str, changed_files: list[str], commit: str | None,
                  mention: str | None = None) -> str:
    """The comment a follow-up run leaves on the pull request: what changed in that round, or the answer."""
    greeting = f"@{mention} " if mention else ""
    if commit is None:
        return f"{greeting}{summary.strip() or 'No change was needed.'}"
    files = "\n".join(f"- `{path}`" for path in changed_files)
    return (f"{greeting}**Round {round_number + 1}** pushed {commit[:12]}.\n\n{summary.strip()}\n\n"
            f"Files changed in this round:\n{files}\n")


def failure_comment(*, round_number: int, error: dict, mention: str | None = None) -> str:
    """The comment left when a run on an open pull request fails: the error in plain words, and what to do."""
    greeting = f"@{mention} " if mention else ""
    return (f"{greeting}Round {round_number + 1} failed and changed nothing: {error.get('message', '')} "
            f"(`{error.get('code', 'error')}`).\n\nComment again to retry, or rephrase the request.")


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.strip().splitlines())


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
