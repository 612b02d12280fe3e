"""The bus's TLS material, made and rotated by ``aimctl bus credentials --tls`` like the keys are.

A private CA signs the NATS server's certificate; clients (the services) trust a *bundle* of CA
certificates. Two Secrets hold it:

- ``aim-bus-tls`` (``kubernetes.io/tls``): ``tls.crt`` and ``tls.key`` of the server, and ``ca.crt``,
  the bundle. The NATS pod mounts all of it; the services mount only ``ca.crt``.
- ``aim-bus-ca``: the CA that signs (``ca.crt``, ``ca.key``) and, during a rotation, the next one
  (``next-ca.crt``, ``next-ca.key``). Nothing mounts it: it is what the next rotation reads.

A rotation is two steps, as for the keys, so no client ever meets a server certificate it does not
trust: ``--rotate tls`` makes a new CA and adds it to the bundle (the server's certificate is
renewed by the current CA); once every service has restarted with the new bundle, ``--retire tls``
has the new CA sign the server's certificate and drops the old CA from the bundle. ``--rotate tls``
alone, then ``--retire tls`` at once, is also how a server certificate is renewed before it expires
(:data:`SERVER_DAYS`). NATS re-reads its certificate on a configuration reload (the reloader sidecar
watches the mounted files): connections stay up.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from aimcore.api.bus import auth

TLS_SECRET = "aim-bus-tls"
CA_SECRET = "aim-bus-ca"
SERVICE = "aim-nats"
HEADLESS = "aim-nats-headless"
CA_DAYS = 3650
SERVER_DAYS = 365
TLS_ROLE = "tls"
"""The name ``--rotate``/``--retire`` take for the TLS material (beside the bus roles)."""
COMPONENT = "bus-tls"


def default_hosts(namespace: str) -> tuple[str, ...]:
    """The names NATS is reached by in ``namespace``: its Service, and each pod of the StatefulSet
    through the headless Service (cluster routes)."""
    names = [
        SERVICE,
        f"{SERVICE}.{namespace}",
        f"{SERVICE}.{namespace}.svc",
        f"{SERVICE}.{namespace}.svc.cluster.local",
    ]
    names += [f"*.{HEADLESS}.{namespace}.svc", f"*.{HEADLESS}.{namespace}.svc.cluster.local"]
    return tuple(names)


@dataclass
class Authority:
    """One CA: its certificate and key, PEM."""

    cert: str
    key: str

    @classmethod
    def new(cls, name: str) -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(_cert_pem(cert), _key_pem(key))

    def issue_server(self, hosts: Sequence[str]) -> tuple[str, str]:
        """A server certificate for ``hosts`` (names, wildcards or addresses) and its key, PEM."""
        ca_cert = x509.load_pem_x509_certificate(self.cert.encode())
        ca_key = serialization.load_pem_private_key(self.key.encode(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
            .add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        return _cert_pem(cert), _key_pem(key)


@dataclass
class BusTls:
    """The bus's TLS material: the CA that signs, the next one during a rotation, the server's
    certificate and the names it is for."""

    namespace: str
    ca: Authority
    next: Authority | None
    server_cert: str
    server_key: str

    @classmethod
    def new(cls, namespace: str, hosts: Sequence[str]) -> BusTls:
        ca = Authority.new(f"aim-bus-ca {_now():%Y-%m-%d}")
        cert, key = ca.issue_server(hosts)
        return cls(namespace, ca, None, cert, key)

    @property
    def hosts(self) -> list[str]:
        cert = x509.load_pem_x509_certificate(self.server_cert.encode())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        return [str(n.value) for n in names]

    @property
    def bundle(self) -> str:
        """The CAs clients trust: the signing one, and the next one during a rotation."""
        return self.ca.cert + (self.next.cert if self.next is not None else "")

    def rotate(self) -> None:
        """Trust a new CA (added to the bundle); renew the server's certificate from the current one."""
        if self.next is not None:
            raise auth.RotationError("a rotation of the bus CA is under way: retire the old CA first")
        self.next = Authority.new(f"aim-bus-ca {_now():%Y-%m-%d}")
        self.server_cert, self.server_key = self.ca.issue_server(self.hosts)

    def retire(self) -> None:
        """The new CA signs the server's certificate; the old CA is trusted no more."""
        if self.next is None:
            raise auth.RotationError("no rotation of the bus CA is under way: nothing to retire")
        self.ca, self.next = self.next, None
        self.server_cert, self.server_key = self.ca.issue_server(self.hosts)

    def secrets(self) -> list[dict[str, Any]]:
        ca_data = {"ca.crt": self.ca.cert, "ca.key": self.ca.key}
        if self.next is not None:
            ca_data |= {"next-ca.crt": self.next.cert, "next-ca.key": self.next.key}
        tls_data = {"tls.crt": self.server_cert, "tls.key": self.server_key, "ca.crt": self.bundle}
        return [
            _secret(TLS_SECRET, self.namespace, "kubernetes.io/tls", tls_data),
            _secret(CA_SECRET, self.namespace, "Opaque", ca_data),
        ]

    @classmethod
    def read(cls, objects: Iterable[dict[str, Any]]) -> BusTls | None:
        """The material in the Secrets among ``objects``; ``None`` if there is none."""
        found: dict[str, tuple[str, dict[str, str]]] = {}
        for obj in objects:
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "Secret" and meta.get("name") in (TLS_SECRET, CA_SECRET):
                data = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
                found[meta["name"]] = (meta.get("namespace", "aim-system"), data)
        if not found:
            return None
        if set(found) != {TLS_SECRET, CA_SECRET}:
            raise ValueError(f"the bus TLS needs both Secrets {TLS_SECRET} and {CA_SECRET} in the input")
        namespace, tls = found[TLS_SECRET]
        _, ca = found[CA_SECRET]
        following = Authority(ca["next-ca.crt"], ca["next-ca.key"]) if "next-ca.crt" in ca else None
        return cls(
            namespace, Authority(ca["ca.crt"], ca["ca.key"]), following, tls["tls.crt"], tls["tls.key"]
        )


def _secret(name: str, namespace: str, type_: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": type_,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "aim-engine", "app.kubernetes.io/component": COMPONENT},
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
