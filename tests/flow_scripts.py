"""Scripted model steps and checks on a job's branch and keys, shared by the flow tests."""

from service import describe
from service.workspace.git import Git

FAQ = {"tool": "write_file", "args": {"path": "docs/faq.md", "content": "# FAQ\n\nAsk away.\n"}}


def finish(title="Add an FAQ", summary="Added docs/faq.md."):
    return {"tool": "finish", "args": {"title": title, "summary": summary}}


def edit(path, old, new):
    return {"tool": "edit_file", "args": {"path": path, "old": old, "new": new}}


def branch_log(repo, branch):
    """Subjects of the branch's commits, oldest first."""
    out = Git().out("log", "--reverse", "--format=%s", f"refs/heads/{branch}", git_dir=repo)
    return out.splitlines()


def show(repo, rev, path):
    return Git().out("show", f"{rev}:{path}", git_dir=repo)


def branch_exists(stack, branch: str) -> bool:
    return bool(
        Git().run("rev-parse", "--verify", "-q", f"refs/heads/{branch}", git_dir=stack.repo, check=False).stdout.strip()
    )


def job_keys_left(redis_client, job_id: str, message_ids: list[str]) -> list[bytes]:
    """Every key that names the job or one of its messages, and every list, set or hash that still holds its id."""
    left = [
        key
        for key in redis_client.scan_iter(count=1000)
        if job_id.encode() in key or any(m.encode() in key for m in message_ids)
    ]
    for key in redis_client.scan_iter(count=1000):
        kind = redis_client.type(key)
        members = (
            redis_client.zrange(key, 0, -1)
            if kind == b"zset"
            else redis_client.smembers(key)
            if kind == b"set"
            else redis_client.hvals(key)
            if kind == b"hash" and key.startswith(b"cd:idem:")
            else []
        )
        if job_id.encode() in members:
            left.append(key)
    return left


def trailer_count(repo, branch: str, message_id: str) -> int:
    """How many commits on the branch carry this message's trailer."""
    out = Git().out(
        "log",
        "--format=%H",
        "--fixed-strings",
        f"--grep={describe.TRAILER_MESSAGE}: {message_id}",
        f"refs/heads/{branch}",
        git_dir=repo,
    )
    return len(out.splitlines())


def no_change(reason="The docs already say that."):
    """A scripted finish that says the request needs no change, and why."""
    return {"tool": "finish", "args": {"title": "", "summary": reason, "no_change_needed": True}}
