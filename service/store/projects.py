"""Projects: a repository plus base ref on one code host, owned by an account."""

import redis

from service.clock import now_iso
from service.errors import ProjectNotFound
from service.ids import UlidGenerator, new_id
from service.models import Project
from service.store.codec import dump, load

_INDEX = "cd:projects"


def _key(project_id: str) -> str:
    return f"cd:project:{project_id}"


class ProjectStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    def add(self, *, account: str, host: str, repository: str, web_url: str, ref: str,
            docs_root: str = "", host_data: dict | None = None) -> Project:
        """Register a project and return it with its new id."""
        project = Project(id=new_id("prj", self._ids), account=account, host=host, repository=repository,
                          web_url=web_url, ref=ref, docs_root=docs_root, created_at=now_iso(),
                          host_data=host_data or {})
        with self._redis.pipeline() as pipe:
            pipe.set(_key(project.id), dump(project))
            pipe.zadd(_INDEX, {project.id: 0})
            pipe.execute()
        return project

    def save(self, project: Project) -> None:
        """Write back a changed project (e.g. enabled or disabled)."""
        self._redis.set(_key(project.id), dump(project))

    def set_enabled(self, project_id: str, enabled: bool) -> Project:
        """Switch a project on or off; a disabled project keeps its jobs readable but takes no new work."""
        project = self.get(project_id)
        project.enabled = enabled
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
        ids = [i.decode() for i in self._redis.zrangebylex(_INDEX, "-", "+")]
        if not ids:
            return []
        raws = self._redis.mget([_key(i) for i in ids])
        return [load(Project, raw) for raw in raws if raw is not None]
