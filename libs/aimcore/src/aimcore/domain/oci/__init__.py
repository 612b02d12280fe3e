"""Reading images straight from OCI registries: references, pull-secret credentials, the
distribution API (manifest + config only, catalog, tags) and AIM label parsing.

    from aimcore.domain.oci import RegistryClient, credentials_from_secrets
    async with RegistryClient(credentials_from_secrets(secrets)) as registry:
        metadata = await registry.image_metadata("ghcr.io/silogen/aim-llama:0.7.0")
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
from aimcore.domain.oci.client import (
    DEFAULT_PLATFORM,
    ImageConfig,
    Manifest,
    Platform,
    RegistryClient,
    select_platform,
)
from aimcore.domain.oci.errors import (
    OCI_ERRORS,
    AddressNotAllowed,
    AuthFailed,
    CredentialsError,
    ImageNotFound,
    InsecureTokenRealm,
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
    "Challenge",
    "Credentials",
    "CredentialsError",
    "DockerConfig",
    "ImageConfig",
    "ImageNotFound",
    "ImageReference",
    "InsecureTokenRealm",
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
