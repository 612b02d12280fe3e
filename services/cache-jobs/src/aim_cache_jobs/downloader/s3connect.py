"""The connections a boto3 S3 client opens (the listing: ``ListObjectsV2``, ``HeadObject``) under the
operator's outbound address policy, at connect time.

botocore sends through urllib3 connection pools whose connection classes it picks per scheme; a
client guarded here gets connection classes that resolve the host once, judge every address
(:func:`aimcore.domain.outbound.connect.resolve`) and connect to exactly the judged addresses (TLS still
verifies the certificate for the host name). That covers the endpoint (``AWS_ENDPOINT_URL``),
virtual-hosted bucket names and a proxy alike. botocore never follows HTTP redirects itself, and it
wraps what a connection raises, so callers find the refusal with
:func:`aimcore.domain.outbound.refusal_in`. The object bytes are fetched by the downloader's own
(guarded) connections, not through boto3.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from botocore.awsrequest import (
    AWSHTTPConnection,
    AWSHTTPConnectionPool,
    AWSHTTPSConnection,
    AWSHTTPSConnectionPool,
)
from urllib3.exceptions import NameResolutionError

from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.outbound.connect import resolve


def guard_client(client: Any, policy: OutboundPolicy) -> None:
    """Make every connection of ``client`` (a boto3 client) apply ``policy``."""

    class Connection(AWSHTTPConnection):  # type: ignore[misc]
        def _new_conn(self) -> socket.socket:
            return _new_conn(self, policy, super()._new_conn)

    class SecureConnection(AWSHTTPSConnection):  # type: ignore[misc]
        def _new_conn(self) -> socket.socket:
            return _new_conn(self, policy, super()._new_conn)

    class Pool(AWSHTTPConnectionPool):  # type: ignore[misc]
        ConnectionCls = Connection

    class SecurePool(AWSHTTPSConnectionPool):  # type: ignore[misc]
        ConnectionCls = SecureConnection

    classes = {"http": Pool, "https": SecurePool}
    session = client._endpoint.http_session
    session._pool_classes_by_scheme = classes  # proxy managers are made from this later
    session._manager.pool_classes_by_scheme = classes


def _new_conn(conn: Any, policy: OutboundPolicy, connect: Callable[[], socket.socket]) -> socket.socket:
    """``connect()`` (a urllib3 connection's own ``_new_conn``) to each judged address of the
    connection's host in turn; the first that answers wins."""
    host = conn._dns_host
    try:
        targets = resolve(host, conn.port, policy)
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    if targets is None:
        return connect()
    error: Exception | None = None
    for target in targets:
        conn._dns_host = target  # connect to the judged address; TLS still uses conn.host
        try:
            return connect()
        except Exception as exc:  # urllib3 wraps socket errors; try the next address
            error = exc
        finally:
            conn._dns_host = host
    assert error is not None
    raise error
