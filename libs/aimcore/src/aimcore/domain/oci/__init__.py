"""Reading images straight from OCI registries: references, pull-secret credentials, the
distribution API (manifest + config only, catalog, tags; the protocol and its token exchange
written once, sent by an async client and a blocking one) and AIM label parsing.

    from aimcore.domain.oci import RegistryClient, credentials_from_secrets
    async with RegistryClient(credentials_from_secrets(secrets)) as registry:
        metadata = await registry.image_metadata("ghcr.io/silogen/aim-llama:0.7.0")

Modules: ``documents`` (manifests, indexes, configs: what a registry serves), ``exchange`` (one
authenticated request, the token exchange), ``protocol`` (the API calls), ``client`` (async,
aiohttp), ``blocking`` (for threads: the downloader's), ``auth`` (pull secrets, challenges),
``labels`` (AIM labels), ``errors``.
"""

from aimcore.api.imageref import (
    ImageReference,
    InvalidReference,
    normalize_registry,
    parse_reference,
    parse_repository,
)
from aimcore.domain.oci.auth import (
    Challenge,
    Credentials,
    DockerConfig,
    credentials_from_secret,
    credentials_from_secrets,
    parse_dockerconfigjson,
    parse_www_authenticate,
)
from aimcore.domain.oci.blocking import BlockingRegistryClient
from aimcore.domain.oci.client import RegistryClient
from aimcore.domain.oci.documents import (
    DEFAULT_PLATFORM,
    ImageConfig,
    Manifest,
    Platform,
    select_platform,
)
from aimcore.domain.oci.errors import (
    OCI_ERRORS,
    AddressNotAllowed,
    AuthFailed,
    CredentialsError,
    DigestMismatch,
    ImageNotFound,
    InsecureTokenRealm,
    InvalidDocument,
    LabelError,
    OCIError,
    RegistryError,
    RegistryUnreachable,
)
from aimcore.domain.oci.labels import image_metadata

__all__ = [
    "DEFAULT_PLATFORM",
    "OCI_ERRORS",
    "AddressNotAllowed",
    "AuthFailed",
    "BlockingRegistryClient",
    "Challenge",
    "Credentials",
    "CredentialsError",
    "DigestMismatch",
    "DockerConfig",
    "ImageConfig",
    "ImageNotFound",
    "ImageReference",
    "InsecureTokenRealm",
    "InvalidDocument",
    "InvalidReference",
    "LabelError",
    "Manifest",
    "OCIError",
    "Platform",
    "RegistryClient",
    "RegistryError",
    "RegistryUnreachable",
    "credentials_from_secret",
    "credentials_from_secrets",
    "image_metadata",
    "normalize_registry",
    "parse_dockerconfigjson",
    "parse_reference",
    "parse_repository",
    "parse_www_authenticate",
    "select_platform",
]
