"""Where a new leader's watches resume, so that a watcher restart or failover does not list every
object again.

A leader records, per kind, a :class:`ResumePoint` in the ``aim-watcher`` bucket each time
everything it had taken from the API server is published (after a list, now and then on a watch
bookmark, at the end of each watch window, and when it stops): the resourceVersion through which
every change went out, and the mirror revision through which every entry of the kind is a version
whose change event went out. The next leader reads the mirror's identities as before (for the
deletions a later relist must notice), takes an entry above that revision as never published
(the leader stopped between the mirror write and the event), and opens its watch from the
resourceVersion: the API server replays what happened since, those unpublished versions
included. Only when the API server no longer has that history (``410 Gone``: minutes, or a CRD
upgrade) does it list, as it always did. Without a point (a first start, or a bucket lost), it
asks the events stream which versions were published (``aim_watcher.watching.published_versions``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue

from aimcore.api.bus import subjects, topology
from aimcore.api.kinds import KindRef

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    resource_version: str
    """Every change of the kind up to this resourceVersion was published."""
    published_through: int
    """Every mirror entry of the kind at or below this revision holds a published version."""
    mirror: str
    """Which mirror those revisions number (when its bucket was created): a point about a mirror
    made again since (revisions start over, nothing is mirrored) is not used."""


def key(ref: KindRef) -> str:
    return f"{subjects.group_token(ref.group)}.{ref.kind}"


def decode(raw: bytes | None) -> ResumePoint | None:
    """A stored point, or None for anything unreadable (then the next leader lists)."""
    try:
        doc = json.loads(raw or b"")
        point = ResumePoint(str(doc["resourceVersion"]), int(doc["publishedThrough"]), str(doc["mirror"]))
    except (ValueError, KeyError, TypeError):
        return None
    return point if point.resource_version else None


def encode(point: ResumePoint) -> bytes:
    return json.dumps(
        {
            "resourceVersion": point.resource_version,
            "publishedThrough": point.published_through,
            "mirror": point.mirror,
        }
    ).encode()


async def mirror_id(kv: KeyValue) -> str:
    """What tells this mirror from one made again under the same name: its creation time."""
    created = (await kv.status()).stream_info.created
    return created.isoformat() if created is not None else ""


class ResumePoints:
    """The ``aim-watcher`` bucket's points about one mirror (:func:`mirror_id`), one key per kind."""

    def __init__(self, kv: KeyValue, mirror: str) -> None:
        self.kv = kv
        self.mirror = mirror

    @classmethod
    async def about(cls, js: JetStreamContext, objects: KeyValue) -> ResumePoints:
        """The points about the mirror ``objects``, in the ``aim-watcher`` bucket."""
        return cls(await js.key_value(topology.WATCHER_BUCKET), await mirror_id(objects))

    async def load(self, ref: KindRef) -> ResumePoint | None:
        """The kind's point about this mirror, if there is one."""
        try:
            entry = await self.kv.get(key(ref))
        except (KeyNotFoundError, KeyDeletedError):
            return None
        point = decode(entry.value)
        if point is None:
            log.warning("%s: unreadable resume point; listing instead", ref.short)
        elif point.mirror != self.mirror or not self.mirror:
            log.info("%s: the resume point is about another mirror; listing instead", ref.short)
            return None
        return point

    async def save(self, ref: KindRef, resource_version: str, published_through: int) -> None:
        await self.kv.put(key(ref), encode(ResumePoint(resource_version, published_through, self.mirror)))
