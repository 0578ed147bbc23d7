"""Projects: a repository plus base ref on one code host, owned by an account."""

import redis

from service.clock import now_iso
from service.errors import ProjectNotFound
from service.ids import UlidGenerator, new_id
from service.models import Project
from service.store.codec import dump, load
from service.store.replies import text, transaction

_INDEX = "cd:projects"
# host + repository -> project id, for hosts where a repository has exactly one project (GitHub).
_BY_REPOSITORY = "cd:projects:by-repository"


def project_key(project_id: str) -> str:
    """Where the project's record is kept."""
    return f"cd:project:{project_id}"


_key = project_key


def _repository_field(host: str, repository: str) -> str:
    return f"{host}:{repository.lower()}"


class ProjectStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    def add(self, *, account: str, host: str, repository: str, web_url: str, ref: str,
            docs_root: str = "", host_data: dict | None = None) -> Project:
        """Register a project and return it with its new id."""
        project = self._new(account=account, host=host, repository=repository, web_url=web_url, ref=ref,
                            docs_root=docs_root, host_data=host_data)
        with self._redis.pipeline() as pipe:
            self._write_new(pipe, project)
            pipe.execute()
        return project

    def ensure(self, *, account: str, host: str, repository: str, web_url: str, ref: str,
               host_data: dict | None = None) -> tuple[Project, bool]:
        """The one project of `repository` on `host`, enabled and up to date; True when it was created now.

        Two deliveries about the same repository may race; the index makes the loser reuse the winner's project.
        """
        field = _repository_field(host, repository)

        def attempt(pipe: redis.client.Pipeline) -> tuple[Project, bool]:
            existing = pipe.hget(_BY_REPOSITORY, field)
            project = load(Project, pipe.get(_key(text(existing)))) if existing else None
            created = project is None
            if project is None:
                project = self._new(account=account, host=host, repository=repository, web_url=web_url,
                                    ref=ref, docs_root="", host_data=host_data)
            else:
                project.account, project.web_url, project.ref = account, web_url, ref
                project.host_data = {**project.host_data, **(host_data or {})}
                project.enabled, project.disabled_reason = True, None
            pipe.multi()
            if created:
                self._write_new(pipe, project)
                pipe.hset(_BY_REPOSITORY, field, project.id)
            else:
                pipe.set(_key(project.id), dump(project))
            return project, created

        return transaction(self._redis, attempt, _BY_REPOSITORY)

    def find_by_repository(self, host: str, repository: str) -> Project | None:
        """The project `ensure` made for `repository` on `host`, if any."""
        project_id = self._redis.hget(_BY_REPOSITORY, _repository_field(host, repository))
        return self.find(text(project_id)) if project_id else None

    def save(self, project: Project) -> None:
        """Write back a changed project (e.g. enabled or disabled)."""
        self._redis.set(_key(project.id), dump(project))

    def set_enabled(self, project_id: str, enabled: bool, *, reason: str | None = None) -> Project:
        """Switch a project on or off; a disabled project keeps its jobs readable but takes no new work.

        `reason` is the error code a run of the disabled project fails with (default `project_disabled`).
        """
        project = self.get(project_id)
        project.enabled = enabled
        project.disabled_reason = None if enabled else (reason or "project_disabled")
        self.save(project)
        return project

    def set_max_tokens(self, project_id: str, max_tokens: int | None) -> Project:
        """Set (or, with None, clear) the default token budget of the project's new jobs."""
        project = self.get(project_id)
        project.max_tokens = max_tokens
        self.save(project)
        return project

    def find(self, project_id: str) -> Project | None:
        return load(Project, self._redis.get(_key(project_id)))

    def get(self, project_id: str) -> Project:
        """The project, or ProjectNotFound."""
        project = self.find(project_id)
        if project is None:
            raise ProjectNotFound(f"no project {project_id}")
        return project

    def all(self) -> list[Project]:
        """Every project, oldest first."""
        ids = [text(i) for i in self._redis.zrangebylex(_INDEX, "-", "+")]
        if not ids:
            return []
        raws = self._redis.mget([_key(i) for i in ids])
        return [load(Project, raw) for raw in raws if raw is not None]

    def _new(self, *, account, host, repository, web_url, ref, docs_root, host_data) -> Project:
        return Project(id=new_id("prj", self._ids), account=account, host=host, repository=repository,
                       web_url=web_url, ref=ref, docs_root=docs_root, created_at=now_iso(),
                       host_data=host_data or {})

    @staticmethod
    def _write_new(pipe, project: Project) -> None:
        pipe.set(_key(project.id), dump(project))
        pipe.zadd(_INDEX, {project.id: 0})
