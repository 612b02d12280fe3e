"""A real OCI registry on loopback: Debian's ``docker-registry`` (CNCF distribution v2.8) as a process.

Filesystem storage under the workdir, deletes enabled, and optionally htpasswd (basic) auth. The
registry only accepts bcrypt htpasswd lines; :func:`bcrypt_htpasswd` makes one with the ``bcrypt``
module when it is installed, else with the system's libcrypt (libxcrypt, which every Debian has and
which implements bcrypt), else with Apache's ``htpasswd``.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import importlib
import os
import secrets
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from aim_dev.local import binaries
from aim_dev.local.processes import ManagedProcess, SingleProcessServer, free_port, start_with_retries

BCRYPT_COST = 5
"""Low on purpose: the registry checks the password on every request of a local test registry."""


@dataclass
class Registry(SingleProcessServer):
    workdir: Path
    port: int = field(default_factory=free_port)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    process: ManagedProcess | None = None
    die_with_parent: bool = True

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``, the registry part of image references."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    @property
    def auth(self) -> tuple[str, str] | None:
        if self.username is None or self.password is None:
            return None
        return self.username, self.password

    @property
    def config_path(self) -> Path:
        return self.workdir / "config.yml"

    @property
    def log_path(self) -> Path | None:
        return self.process.log_path if self.process else None

    def start(self, timeout: float = 30.0, attempts: int = 3) -> Registry:
        """Start the registry; a port taken between choosing and binding it is retried on a new one."""

        def new_port() -> None:
            self.port = free_port()

        return start_with_retries(lambda: self._start(timeout), self.stop, new_port, attempts)

    def _start(self, timeout: float) -> Registry:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(yaml.safe_dump(self._config(), sort_keys=False))
        self.process = ManagedProcess(
            "docker-registry",
            [binaries.find("docker-registry"), "serve", str(self.config_path)],
            self.workdir / "logs",
            die_with_parent=self.die_with_parent,
        ).start()
        self.process.wait_until(self._healthy, timeout, "docker-registry GET /v2/")
        return self

    def _config(self) -> dict[str, object]:
        config: dict[str, object] = {
            "version": 0.1,
            "log": {"level": "info", "formatter": "text", "accesslog": {"disabled": False}},
            "storage": {
                "filesystem": {"rootdirectory": str(self.workdir / "data")},
                "delete": {"enabled": True},
                "maintenance": {"uploadpurging": {"enabled": False}},
            },
            "http": {"addr": self.host, "secret": secrets.token_hex(16)},
            "health": {"storagedriver": {"enabled": False}},
        }
        if self.username is not None:
            if self.password is None:
                raise ValueError("a registry with a username needs a password")
            htpasswd = self.workdir / "htpasswd"
            htpasswd.write_text(f"{self.username}:{bcrypt_htpasswd(self.password)}\n")
            htpasswd.chmod(0o600)
            config["auth"] = {"htpasswd": {"realm": "aim-local-registry", "path": str(htpasswd)}}
        return config

    def _healthy(self) -> bool:
        request = urllib.request.Request(f"{self.url}/v2/")
        if self.auth:
            raw = f"{self.auth[0]}:{self.auth[1]}".encode()
            request.add_header("Authorization", "Basic " + base64.b64encode(raw).decode())
        try:
            with urllib.request.urlopen(request, timeout=1) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError as e:
            return e.code == 401 and self.auth is None
        except (urllib.error.URLError, OSError):
            return False


def bcrypt_htpasswd(password: str, cost: int = BCRYPT_COST) -> str:
    """A bcrypt hash for an htpasswd line (``$2b$``/``$2y$``; the registry accepts both)."""
    try:
        bcrypt = importlib.import_module("bcrypt")
    except ImportError:
        pass
    else:
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=cost))
        return str(hashed.decode("ascii"))
    hashed_c = _libcrypt_bcrypt(password, cost)
    if hashed_c:
        return hashed_c
    htpasswd = shutil.which("htpasswd")
    if htpasswd:
        done = subprocess.run(
            [htpasswd, "-niB", "-C", str(max(cost, 4)), "user"],
            input=password,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip().split(":", 1)[1]
    raise RuntimeError("no bcrypt implementation: install python bcrypt, libcrypt1 or apache2-utils")


def _libcrypt_bcrypt(password: str, cost: int) -> str | None:
    """bcrypt through libxcrypt's ``crypt_gensalt_rn`` and ``crypt_rn`` (thread-safe variants)."""
    name = ctypes.util.find_library("crypt") or "libcrypt.so.1"
    try:
        lib = ctypes.CDLL(name)
        gensalt = lib.crypt_gensalt_rn
        crypt_rn = lib.crypt_rn
    except (OSError, AttributeError):
        return None
    gensalt.restype = ctypes.c_char_p
    gensalt.argtypes = [
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
    ]
    crypt_rn.restype = ctypes.c_char_p
    crypt_rn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int]
    entropy = os.urandom(16)
    salt_buf = ctypes.create_string_buffer(128)
    setting = gensalt(b"$2b$", cost, entropy, len(entropy), salt_buf, len(salt_buf))
    if not setting:
        return None
    data = ctypes.create_string_buffer(65536)  # >= sizeof(struct crypt_data)
    hashed: bytes | None = crypt_rn(password.encode(), setting, data, len(data))
    if not hashed or not hashed.startswith(b"$2"):
        return None
    return hashed.decode("ascii")
