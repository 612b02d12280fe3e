"""LLMKube Model sources: parsing spec.source/files/mmproj into what to stage, and the security gates
(local allow-listed roots, SSRF checks on remote hosts) the original operator shipped without."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from aim_cache.llmkube.fetch import primary_of
from aim_cache.llmkube.sources import (
    Policy,
    SourceError,
    SourceUnreachable,
    StagedFile,
    cache_key,
    check_local,
    check_remote,
    check_source,
    parse_source,
)
from aimcore.api.crds.validation import decode
from aimcore.api.kinds import GROUP_LLMKUBE

HF = "https://huggingface.co"


def key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# parse_source: accepted single-file sources
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row",  # (source, kind, url, path, claim, primary relative or None when nothing is staged)
    [
        (
            f"{HF}/org/repo/resolve/main/model-Q4_K_M.gguf",
            "http",
            f"{HF}/org/repo/resolve/main/model-Q4_K_M.gguf",
            None,
            None,
            "model-Q4_K_M.gguf",
        ),
        (  # blob pages are rewritten to the raw-bytes endpoint
            f"{HF}/org/repo/blob/v1.0/sub/dir/m.gguf",
            "http",
            f"{HF}/org/repo/resolve/v1.0/sub/dir/m.gguf",
            None,
            None,
            "m.gguf",
        ),
        (  # scheme is case-insensitive and normalised; fragment dropped
            "HTTPS://huggingface.co/org/repo/resolve/main/m.gguf#frag",
            "http",
            f"{HF}/org/repo/resolve/main/m.gguf",
            None,
            None,
            "m.gguf",
        ),
        (
            "http://models.example.com:8080/a/b/tiny.gguf?x=1",
            "http",
            "http://models.example.com:8080/a/b/tiny.gguf?x=1",
            None,
            None,
            "tiny.gguf",
        ),
        (  # unsafe characters in the basename are replaced
            "https://example.com/dl/My%20Model%20(v2).gguf",
            "http",
            "https://example.com/dl/My%20Model%20(v2).gguf",
            None,
            None,
            "My_Model_v2_.gguf",
        ),
        ("https://example.com/", "http", "https://example.com/", None, None, "model.gguf"),
        ("https://example.com/..", "http", "https://example.com/..", None, None, "model.gguf"),
        ("file:///mnt/models/m.gguf", "file", None, "/mnt/models/m.gguf", None, "m.gguf"),
        ("FILE:///mnt/models/m.gguf", "file", None, "/mnt/models/m.gguf", None, "m.gguf"),
        ("/mnt/models/m.gguf", "file", None, "/mnt/models/m.gguf", None, "m.gguf"),
        ("/mnt/models/.hidden", "file", None, "/mnt/models/.hidden", None, "hidden"),
        ("pvc://my-models/path/to/m.gguf", "pvc", None, "path/to/m.gguf", "my-models", None),
    ],
)
def test_single_file_sources(row: tuple[str, str, str | None, str | None, str | None, str | None]) -> None:
    source, kind, url, path, claim, relative = row
    parsed = parse_source(**{"source": source})
    assert parsed.kind == kind
    assert parsed.url == url
    assert parsed.path == path
    assert parsed.claim == claim
    assert parsed.cache_key == key(source)
    if relative is None:
        assert parsed.files == ()
        assert parsed.staged_files == []
    else:
        assert parsed.files == (
            StagedFile(relative, url, path if kind == "file" else None, primary=True, mmproj=False),
        )
        assert parsed.staged_files == [relative]


def test_cache_key_is_the_literal_source() -> None:
    assert cache_key("https://a/b") == key("https://a/b")
    assert len(cache_key("x")) == 16
    # Any textual change is a new key (the original's #619: keys follow the current spec).
    one = parse_source(**{"source": "https://example.com/m.gguf"}).cache_key
    two = parse_source(**{"source": "HTTPS://example.com/m.gguf"}).cache_key
    assert one != two


# ---------------------------------------------------------------------------------------------
# parse_source: multi-file sets
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "rev"),
    [
        (f"{HF}/org/repo", "main"),
        (f"{HF}/org/repo/", "main"),
        (f"{HF}/org/repo/tree/v2", "v2"),
        (f"{HF}/org/repo/resolve/abc123/", "abc123"),
    ],
)
def test_hf_repository_with_files(source: str, rev: str) -> None:
    parsed = parse_source(
        **{
            "source": source,
            "files": ["q4/model-00001.gguf", "q4/model-00002.gguf"],
            "mmproj": "mmproj f16.gguf",
        }
    )
    base = f"{HF}/org/repo/resolve/{rev}"
    assert parsed.kind == "http"
    assert parsed.url == f"{base}/q4/model-00001.gguf"
    assert parsed.files == (
        StagedFile("q4/model-00001.gguf", f"{base}/q4/model-00001.gguf", None, primary=True, mmproj=False),
        StagedFile("q4/model-00002.gguf", f"{base}/q4/model-00002.gguf", None, primary=False, mmproj=False),
        StagedFile("mmproj f16.gguf", f"{base}/mmproj%20f16.gguf", None, primary=False, mmproj=True),
    )
    assert parsed.staged_files == ["q4/model-00001.gguf", "q4/model-00002.gguf", "mmproj f16.gguf"]
    assert parsed.cache_key == cache_key(
        source, ["q4/model-00001.gguf", "q4/model-00002.gguf"], "mmproj f16.gguf"
    )
    assert parsed.cache_key != key(source)


def test_the_file_set_is_part_of_the_cache_key() -> None:
    source = f"{HF}/org/repo"
    one = parse_source(**{"source": source, "files": ["a.gguf"]}).cache_key
    two = parse_source(**{"source": source, "files": ["a.gguf", "b.gguf"]}).cache_key
    three = parse_source(**{"source": source, "files": ["a.gguf"], "mmproj": "p.gguf"}).cache_key
    assert len({one, two, three}) == 3
    assert parse_source(**{"source": source, "files": ["a.gguf"]}).cache_key == one


def test_hf_dataset_prefix_is_kept() -> None:
    parsed = parse_source(**{"source": f"{HF}/datasets/org/repo", "files": ["a.gguf"]})
    assert parsed.url == f"{HF}/datasets/org/repo/resolve/main/a.gguf"


def test_generic_http_base_with_files_quotes_segments() -> None:
    parsed = parse_source(
        **{"source": "https://mirror.example.com/models/x/", "files": ["a b.gguf", "d/c#1.gguf"]}
    )
    assert [f.url for f in parsed.files] == [
        "https://mirror.example.com/models/x/a%20b.gguf",
        "https://mirror.example.com/models/x/d/c%231.gguf",
    ]
    assert [f.relative for f in parsed.files] == ["a b.gguf", "d/c#1.gguf"]
    assert [f.primary for f in parsed.files] == [True, False]


def test_single_file_with_mmproj_is_a_sibling() -> None:
    hf = parse_source(**{"source": f"{HF}/org/repo/blob/r1/sub/m.gguf", "mmproj": "mmproj.gguf"})
    assert hf.files[1] == StagedFile(
        "mmproj.gguf", f"{HF}/org/repo/resolve/r1/mmproj.gguf", None, primary=False, mmproj=True
    )
    web = parse_source(**{"source": "https://example.com/d/m.gguf?sig=1", "mmproj": "p.gguf"})
    assert web.files[1].url == "https://example.com/d/p.gguf"
    local = parse_source(**{"source": "/models/d/m.gguf", "mmproj": "p.gguf"})
    assert local.files[1] == StagedFile("p.gguf", None, "/models/d/p.gguf", primary=False, mmproj=True)


def test_local_directory_with_files() -> None:
    parsed = parse_source(
        **{"source": "file:///models/llama/", "files": ["w/a.gguf", "b.gguf"], "mmproj": "p.gguf"}
    )
    assert parsed.kind == "file"
    assert parsed.path == "/models/llama"
    assert [(f.relative, f.local, f.primary, f.mmproj) for f in parsed.files] == [
        ("w/a.gguf", "/models/llama/w/a.gguf", True, False),
        ("b.gguf", "/models/llama/b.gguf", False, False),
        ("p.gguf", "/models/llama/p.gguf", False, True),
    ]


# ---------------------------------------------------------------------------------------------
# parse_source: rejections
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"source": ""},
        {"source": "s3://bucket/key"},
        {"source": "ftp://host/m.gguf"},
        {"source": "hf://org/repo"},
        {"source": "org/repo"},
        {"source": "relative/path.gguf"},
        {"source": "model.gguf"},
        {"source": "https://user:secret@example.com/m.gguf"},
        {"source": "https://token@example.com/m.gguf"},
        {"source": "https:///m.gguf"},
        {"source": "https://example.com:99999/m.gguf"},
        {"source": "https://example.com/m .gguf"},
        {"source": "/mnt/m\x00.gguf"},
        {"source": " /mnt/m.gguf"},
        {"source": "file://mnt/models/m.gguf"},
        {"source": "file://host/mnt/m.gguf"},
        {"source": "/mnt/models/"},
        {"source": f"{HF}/org"},
        {"source": f"{HF}/org/repo"},  # a repository without files
        {"source": f"{HF}/org/repo/tree/main"},
        {"source": f"{HF}/org/repo/tree/main/sub"},
        {"source": f"{HF}/org/repo/commits/main"},
        {"source": f"{HF}/org/repo/resolve"},
        {"source": "pvc://"},
        {"source": "pvc://claim"},
        {"source": "pvc://claim/"},
        {"source": "pvc://Bad_Claim/m.gguf"},
        {"source": "pvc://claim/../etc/passwd"},
        {"source": "pvc://claim//m.gguf"},
        {"source": "oci://tiny:q4"},  # no registry
        {"source": "oci://registry.example.com/models/tiny@sha1:abc"},
    ],
)
def test_invalid_sources(spec: dict[str, object]) -> None:
    with pytest.raises(SourceError) as err:
        parse_source(**spec)
    assert err.value.reason == "InvalidSource"


@pytest.mark.parametrize(
    "spec",
    [
        {"source": f"{HF}/org/repo", "files": [""]},
        {"source": f"{HF}/org/repo", "files": ["/etc/passwd"]},
        {"source": f"{HF}/org/repo", "files": ["../x.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a/../../x.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a/./x.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a//x.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a\\x.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a\nx.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a.gguf", "a.gguf"]},
        {"source": f"{HF}/org/repo", "files": ["a.gguf"], "mmproj": "a.gguf"},
        {"source": f"{HF}/org/repo", "files": [".aim-manifest.json"]},
        {"source": f"{HF}/org/repo", "files": ["a.gguf"], "mmproj": ""},
        {"source": f"{HF}/org/repo", "files": ["a.gguf"], "mmproj": "../p.gguf"},
        {"source": f"{HF}/org/repo/resolve/main/a.gguf", "files": ["a.gguf"]},
        {"source": f"{HF}/org/repo/resolve/main/m.gguf", "mmproj": "m.gguf"},
        {"source": "https://example.com/m.gguf", "mmproj": "m.gguf"},
        {"source": "/mnt/m.gguf", "mmproj": "m.gguf"},
        {"source": "pvc://claim/m.gguf", "files": ["m.gguf"]},
        {"source": "pvc://claim/m.gguf", "mmproj": "p.gguf"},
        {"source": "oci://registry.example.com/models/tiny:q4", "files": ["model.gguf"]},
        {"source": "oci://registry.example.com/models/tiny:q4", "mmproj": "p.gguf"},
    ],
)
def test_invalid_file_sets(spec: dict[str, object]) -> None:
    with pytest.raises(SourceError) as err:
        parse_source(**spec)
    assert err.value.reason == "InvalidFileSet"


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({}, "spec.source: Field required"),
        ({"source": 7}, "spec.source: Input should be a valid string"),
        ({"source": f"{HF}/org/repo", "files": [3]}, "spec.files.0: Input should be a valid string"),
        ({"source": f"{HF}/org/repo", "files": "a.gguf"}, "spec.files: Input should be a valid list"),
    ],
)
def test_the_model_refuses_what_is_not_a_source(spec: dict[str, object], refusal: str) -> None:
    """A missing or mistyped source or file list never reaches :func:`parse_source`: the Model's
    schema refuses it, naming the field, and the runtime reports ``InvalidSpec``."""
    obj = {
        "apiVersion": f"{GROUP_LLMKUBE}/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "m"},
        "spec": spec,
    }
    assert decode(GROUP_LLMKUBE, "Model", obj).invalid == refusal


def test_empty_files_list_is_a_single_file_source() -> None:
    parsed = parse_source(**{"source": "https://example.com/m.gguf", "files": []})
    assert parsed.staged_files == ["m.gguf"]


@pytest.mark.parametrize(
    "source",
    [
        "https://alice:hunter2@example.com/m.gguf",
        "https://hunter2@example.com/m.gguf",
        "HTTP://alice:hunter2@example.com/m.gguf",
    ],
)
def test_credentials_never_echoed(source: str) -> None:
    with pytest.raises(SourceError) as err:
        parse_source(**{"source": source})
    assert "hunter2" not in str(err.value)
    assert "alice" not in str(err.value)
    assert "credentials" in str(err.value)


def test_source_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unsupported source"):
        parse_source(**{"source": "gopher://x/y"})


# ---------------------------------------------------------------------------------------------
# check_local
# ---------------------------------------------------------------------------------------------


def test_check_local_refuses_everything_without_roots(tmp_path: Path) -> None:
    target = tmp_path / "m.gguf"
    target.write_bytes(b"x")
    with pytest.raises(SourceError) as err:
        check_local(str(target), Policy())
    assert err.value.reason == "SourceNotAllowed"
    assert "AIM_LLMKUBE_ALLOWED_ROOTS" in str(err.value)


@pytest.mark.parametrize(
    ("relative", "allowed"),
    [
        ("models/m.gguf", True),
        ("models/sub/m.gguf", True),
        ("models", True),
        ("models/../models/m.gguf", True),
        ("models/../secret/key", False),
        ("models-evil/m.gguf", False),  # a sibling sharing the prefix is not inside the root
        ("secret/key", False),
        ("models/link-out/key", False),  # symlink escaping the root
        ("models/link-in", True),  # symlink staying inside
    ],
)
def test_check_local(tmp_path: Path, relative: str, allowed: bool) -> None:
    models, secret, evil = tmp_path / "models", tmp_path / "secret", tmp_path / "models-evil"
    for d in (models / "sub", secret, evil):
        d.mkdir(parents=True)
    (models / "link-out").symlink_to(secret)
    (models / "link-in").symlink_to(models / "sub")
    policy = Policy(allowed_roots=(str(models),))
    path = os.path.join(tmp_path, relative)
    if allowed:
        assert check_local(path, policy) == os.path.realpath(path)
    else:
        with pytest.raises(SourceError) as err:
            check_local(path, policy)
        assert err.value.reason == "SourceNotAllowed"


def test_check_local_realpaths_the_roots(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    policy = Policy(allowed_roots=(str(tmp_path / "alias"),))
    assert check_local(str(real / "m.gguf"), policy) == str(real / "m.gguf")


def test_check_local_slash_root_allows_all(tmp_path: Path) -> None:
    assert check_local(str(tmp_path / "x"), Policy(allowed_roots=("/",))) == os.path.realpath(tmp_path / "x")


# ---------------------------------------------------------------------------------------------
# check_remote (no real DNS: every test injects the resolver)
# ---------------------------------------------------------------------------------------------


def resolver(*addresses: str):  # type: ignore[no-untyped-def]
    calls: list[str] = []

    def resolve(host: str) -> list[str]:
        calls.append(host)
        return list(addresses)

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def no_dns(host: str) -> list[str]:
    raise AssertionError(f"unexpected DNS lookup for {host}")


@pytest.mark.parametrize(
    ("addresses", "allow_private", "allowed"),
    [
        (["93.184.216.34"], False, True),
        (["2606:4700::1111"], False, True),
        (["93.184.216.34", "2606:4700::1111"], False, True),
        (["169.254.169.254"], False, False),
        (["169.254.169.254"], True, False),  # metadata is never allowed
        (["169.254.10.1"], True, False),  # link-local is never allowed
        (["fe80::1"], True, False),
        (["fe80::1%eth0"], True, False),
        (["fd00:ec2::254"], True, False),
        (["100.100.100.200"], True, False),
        (["::ffff:169.254.169.254"], True, False),  # IPv4-mapped is unwrapped
        (["127.0.0.1"], False, False),
        (["127.0.0.1"], True, True),
        (["::1"], False, False),
        (["::ffff:127.0.0.1"], False, False),
        (["10.1.2.3"], False, False),
        (["172.16.0.1"], False, False),
        (["172.31.255.255"], False, False),
        (["172.32.0.1"], False, True),
        (["192.168.1.1"], False, False),
        (["192.168.1.1"], True, True),
        (["fd12:3456::1"], False, False),
        (["100.64.0.1"], False, False),
        (["100.127.255.255"], False, False),
        (["100.128.0.1"], False, True),
        (["0.0.0.0"], False, False),
        (["::"], False, False),
        (["93.184.216.34", "10.0.0.1"], False, False),  # one bad address is enough
        (["not-an-ip"], True, False),
    ],
)
def test_check_remote_resolved_addresses(addresses: list[str], allow_private: bool, allowed: bool) -> None:
    policy = Policy(allow_private=allow_private)
    resolve = resolver(*addresses)
    if allowed:
        check_remote("https://models.example.com/m.gguf", policy, resolve)
    else:
        with pytest.raises(SourceError) as err:
            check_remote("https://models.example.com/m.gguf", policy, resolve)
        assert err.value.reason == "SourceNotAllowed"
    assert resolve.calls == ["models.example.com"]


@pytest.mark.parametrize(
    ("url", "allow_private", "allowed"),
    [
        ("http://127.0.0.1:8080/m.gguf", False, False),
        ("http://127.0.0.1:8080/m.gguf", True, True),
        ("http://[::1]/m.gguf", False, False),
        ("http://[::ffff:10.0.0.1]/m.gguf", False, False),
        ("http://169.254.169.254/latest/meta-data/", True, False),
        ("http://[fd00:ec2::254]/", True, False),
        ("http://93.184.216.34/m.gguf", False, True),
        ("HTTP://10.0.0.1/m.gguf", False, False),
        ("http://metadata.google.internal/computeMetadata/v1/", True, False),
        ("http://METADATA.google.internal./x", True, False),
        ("http://metadata/x", True, False),
    ],
)
def test_check_remote_literal_hosts_need_no_dns(url: str, allow_private: bool, allowed: bool) -> None:
    policy = Policy(allow_private=allow_private)
    if allowed:
        check_remote(url, policy, no_dns)
    else:
        with pytest.raises(SourceError) as err:
            check_remote(url, policy, no_dns)
        assert err.value.reason == "SourceNotAllowed"


def test_allowed_hosts_bypass_the_checks() -> None:
    policy = Policy(allowed_hosts=frozenset({"Minio.Storage.svc"}))
    check_remote("http://minio.storage.svc:9000/m.gguf", policy, no_dns)
    check_remote("http://MINIO.storage.svc./m.gguf", policy, no_dns)
    with pytest.raises(SourceError):
        check_remote("http://other.storage.svc/m.gguf", policy, resolver("10.0.0.5"))


@pytest.mark.parametrize("failure", [OSError("Name or service not known"), None])
def test_resolution_failure_is_transient(failure: OSError | None) -> None:
    def resolve(host: str) -> list[str]:
        if failure is not None:
            raise failure
        return []

    with pytest.raises(SourceUnreachable, match=r"cannot resolve host 'nowhere\.example'"):
        check_remote("https://nowhere.example/m.gguf", Policy(), resolve)


@pytest.mark.parametrize("url", ["ftp://example.com/m", "https:///m", "file:///etc/passwd", "http://h:x/"])
def test_check_remote_rejects_non_http(url: str) -> None:
    with pytest.raises(SourceError) as err:
        check_remote(url, Policy(), no_dns)
    assert err.value.reason == "InvalidSource"


def test_check_remote_message_names_the_setting() -> None:
    with pytest.raises(SourceError, match=r"10\.0\.0\.1 \(private\).*AIM_LLMKUBE_ALLOWED_HOSTS"):
        check_remote("https://internal.example/m", Policy(), resolver("10.0.0.1"))


# ---------------------------------------------------------------------------------------------
# check_source: the gates applied to every staged file
# ---------------------------------------------------------------------------------------------


def test_check_source_checks_each_local_file(tmp_path: Path) -> None:
    models, secret = tmp_path / "models", tmp_path / "secret"
    models.mkdir()
    secret.mkdir()
    (models / "b.gguf").symlink_to(secret / "key")
    policy = Policy(allowed_roots=(str(models),))
    ok = parse_source(**{"source": str(models), "files": ["a.gguf"]})
    assert check_source(ok, policy, no_dns) == (str(models / "a.gguf"),)
    escaping = parse_source(**{"source": str(models), "files": ["a.gguf", "b.gguf"]})
    with pytest.raises(SourceError) as err:
        check_source(escaping, policy, no_dns)
    assert err.value.reason == "SourceNotAllowed"


def test_check_source_resolves_each_host_once() -> None:
    source = parse_source(**{"source": f"{HF}/org/repo", "files": ["a.gguf", "b.gguf"], "mmproj": "p.gguf"})
    resolve = resolver("18.239.0.1")
    assert check_source(source, Policy(), resolve) == ()
    assert resolve.calls == ["huggingface.co"]
    with pytest.raises(SourceError):
        check_source(source, Policy(), resolver("10.0.0.1"))


def test_check_source_pvc_needs_nothing() -> None:
    assert check_source(parse_source(**{"source": "pvc://c/m.gguf"}), Policy(), no_dns) == ()


# ---------------------------------------------------------------------------------------------
# oci://: the artifact's layers are the files; its registry is what the policy judges
# ---------------------------------------------------------------------------------------------


def test_an_oci_reference_is_a_source_whose_files_the_registry_lists() -> None:
    raw = "oci://registry.example.com:5000/models/tiny:q4"
    source = parse_source(**{"source": raw})
    assert (source.kind, source.url, source.cache_key, source.files) == ("oci", raw, key(raw), ())
    upper = parse_source(**{"source": raw.replace("oci://", "OCI://")})
    assert upper.url == raw  # the scheme is matched case-insensitively, like the others


def test_check_source_judges_an_oci_registry() -> None:
    source = parse_source(**{"source": "oci://registry.example.com:5000/models/tiny:q4"})
    resolve = resolver("93.184.216.34")
    assert check_source(source, Policy(), resolve) == ()
    assert resolve.calls == ["registry.example.com"]
    for host in ("169.254.169.254", "10.0.0.1"):
        with pytest.raises(SourceError) as err:
            check_source(parse_source(**{"source": f"oci://{host}/m/tiny:q4"}), Policy(), no_dns)
        assert err.value.reason == "SourceNotAllowed"
    docker_hub = parse_source(**{"source": "oci://docker.io/ai/smollm2:latest"})
    resolve = resolver("93.184.216.34")
    check_source(docker_hub, Policy(), resolve)
    assert resolve.calls == ["registry-1.docker.io"]  # where the pulls go


@pytest.mark.parametrize(
    ("paths", "primary"),
    [
        (["LICENSE", "model.gguf", "docker-model-config.json"], "model.gguf"),
        (["model-00001-of-00002.gguf", "model-00002-of-00002.gguf"], "model-00001-of-00002.gguf"),
        (["config.json", "model.safetensors"], "config.json"),
        (["README.md", "Q4.GGUF"], "Q4.GGUF"),
    ],
)
def test_the_primary_of_an_artifact_is_its_first_gguf(paths: list[str], primary: str) -> None:
    assert primary_of(paths) == primary
