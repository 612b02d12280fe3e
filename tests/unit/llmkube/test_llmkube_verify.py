"""The verify Jobs of ``pvc://`` Models (``aim_cache.llmkube.verify``) and the ``aim-model-inspect``
command they run (``aim_cache_jobs.inspect``).

A ``pvc://`` Model is never copied, so its sha256 can only be computed by a pod that mounts the
claim. These tests pin what that pod is allowed to do (mount the claim read-only, run as non-root,
never retry on its own), what each Job remembers in its annotations (the controller's only memory
across restarts), how rounds are told apart from stale ones, and that the one JSON line the command
prints is exactly what ``read_verdict`` accepts, while anything malformed in a (untrusted) pod log is
rejected. The command is run on real GGUF files, including the ``--known`` shortcut that skips
re-reading an unchanged file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aim_cache.llmkube.verify import (
    ANNOTATION_ATTEMPT,
    ANNOTATION_CLAIM_UID,
    ANNOTATION_KNOWN,
    ANNOTATION_ROUND,
    ANNOTATION_SPEC,
    COMMAND,
    COMPONENT,
    CONTAINER,
    LABEL_COMPONENT,
    LABEL_MODEL,
    MOUNT,
    Refusal,
    Verdict,
    annotation,
    attempt_of,
    job_body,
    job_name,
    known_of,
    read_verdict,
    round_of,
    split,
    verify_jobs,
)
from aim_cache_jobs import inspect as inspect_mod
from aim_cache_jobs.inspect import Known, inspect, main
from aimcore.api.kinds import by_kind
from aimcore.api.types import Obj
from tests.unit.llmkube.test_gguf_reader import EXPECTED_STATUS, write_gguf

MODEL_REF = by_kind("inference.llmkube.dev", "Model")
UID = "0b5c6f1e-0000-4000-8000-000000000001"
CLAIM_UID = "9f1d2c3b-0000-4000-8000-0000000000aa"
DIGEST = "d1e2f3a4b5c6d7e8"
SHA = "0f" * 32
KNOWN = Known(size=4_294_967_296, mtime=1_700_000_000.123456, sha256=SHA)
IMAGE = "ghcr.io/example/aim-cache:1.2.3"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def model(name: str = "llama", uid: str = UID) -> Obj:
    return {
        "apiVersion": "inference.llmkube.dev/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name, "namespace": "team-a", "uid": uid},
    }


def body(
    *,
    name: str = "llama",
    uid: str = UID,
    round_: int = 1,
    attempt: int = 1,
    known: Known | None = None,
    digest: str = DIGEST,
    claim_uid: str = CLAIM_UID,
) -> Obj:
    job: Obj = job_body(
        MODEL_REF,
        model(name, uid),
        claim="models",
        claim_uid=claim_uid,
        path="llama/llama-3-8b.Q4_K_M.gguf",
        spec_digest=digest,
        round_=round_,
        attempt=attempt,
        known=known,
        image=IMAGE,
    )
    return job


def with_annotations(**annotations: str) -> Obj:
    return {"metadata": {"annotations": annotations}}


# -- job_body --------------------------------------------------------------------------------------


def test_claim_is_mounted_read_only() -> None:
    pod = body()["spec"]["template"]["spec"]
    [volume] = pod["volumes"]
    assert volume["persistentVolumeClaim"] == {"claimName": "models", "readOnly": True}
    [container] = pod["containers"]
    [mount] = container["volumeMounts"]
    assert mount == {"name": volume["name"], "mountPath": MOUNT, "readOnly": True}
    assert MOUNT == "/model-source"


def test_container_runs_the_inspect_command_on_the_file() -> None:
    [container] = body()["spec"]["template"]["spec"]["containers"]
    assert container["name"] == CONTAINER
    assert container["image"] == IMAGE
    assert container["command"] == [COMMAND] == ["aim-model-inspect"]
    assert container["args"] == ["/model-source/llama/llama-3-8b.Q4_K_M.gguf"]


def test_known_is_passed_only_when_given() -> None:
    without = body()
    [container] = without["spec"]["template"]["spec"]["containers"]
    assert not any(a.startswith("--known") for a in container["args"])
    assert ANNOTATION_KNOWN not in without["metadata"]["annotations"]

    given = body(known=KNOWN)
    [container] = given["spec"]["template"]["spec"]["containers"]
    assert container["args"] == [
        "/model-source/llama/llama-3-8b.Q4_K_M.gguf",
        f"--known=4294967296:1700000000.123456:{SHA}",
    ]
    assert given["metadata"]["annotations"][ANNOTATION_KNOWN] == KNOWN.render()


def test_annotations_record_what_the_round_was_made_for() -> None:
    job = body(round_=7, attempt=3, known=KNOWN)
    assert job["metadata"]["annotations"] == {
        ANNOTATION_SPEC: DIGEST,
        ANNOTATION_CLAIM_UID: CLAIM_UID,
        ANNOTATION_ROUND: "7",
        ANNOTATION_ATTEMPT: "3",
        ANNOTATION_KNOWN: KNOWN.render(),
    }
    # ... and they read back.
    assert (round_of(job), attempt_of(job), known_of(job)) == (7, 3, KNOWN)
    assert annotation(job, ANNOTATION_SPEC) == DIGEST
    assert annotation(job, ANNOTATION_CLAIM_UID) == CLAIM_UID


def test_owned_by_the_model() -> None:
    job = body()
    assert job["apiVersion"] == "batch/v1"
    assert job["kind"] == "Job"
    assert job["metadata"]["namespace"] == "team-a"
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "inference.llmkube.dev/v1alpha1",
            "kind": "Model",
            "name": "llama",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_labels_on_job_and_pod() -> None:
    job = body(name="Llama_3.8B")
    expected = {
        "app.kubernetes.io/part-of": "aim-engine",
        "app.kubernetes.io/managed-by": "aim-cache",
        LABEL_COMPONENT: COMPONENT,
        LABEL_MODEL: "llama_3.8b",  # a valid label value derived from the name
    }
    assert job["metadata"]["labels"] == expected
    assert job["spec"]["template"]["metadata"]["labels"] == expected


def test_non_root_and_no_retries_of_its_own() -> None:
    spec = body()["spec"]
    assert spec["backoffLimit"] == 0
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["securityContext"]["runAsNonRoot"] is True
    [container] = pod["containers"]
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] != 0
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("name", ["llama", "m" * 63, "a-" * 31 + "z", "Mixed.Case_Name"])
def test_job_name_is_a_dns_label(name: str) -> None:
    for round_ in (1, 10, 12345):
        job_name_ = body(name=name, round_=round_)["metadata"]["name"]
        assert job_name_ == job_name(name, UID, round_, DIGEST, CLAIM_UID)
        assert len(job_name_) <= 63
        assert DNS_LABEL.match(job_name_), job_name_
        assert len(body(name=name)["metadata"]["labels"][LABEL_MODEL]) <= 63


@pytest.mark.parametrize(
    ("name", "round_3"), [("llama", "llama-verify-3-8a6ffdf0"), ("m" * 63, "m" * 45 + "-verify-3-8a6ffdf0")]
)
def test_job_names_differ_per_round_model_spec_and_claim(name: str, round_3: str) -> None:
    names = {job_name(name, UID, r, DIGEST, CLAIM_UID) for r in range(1, 51)}
    assert len(names) == 50
    # the same name for another Model (a re-created one has a new uid) does not collide
    assert job_name(name, "another-uid", 1, DIGEST, CLAIM_UID) != job_name(name, UID, 1, DIGEST, CLAIM_UID)
    # a new spec or a re-created claim starts at round 1 again under a new name (the old round 1 may
    # still be being deleted)
    assert job_name(name, UID, 1, "0" * 16, CLAIM_UID) != job_name(name, UID, 1, DIGEST, CLAIM_UID)
    assert job_name(name, UID, 1, DIGEST, "other-claim") != job_name(name, UID, 1, DIGEST, CLAIM_UID)
    # a golden value: a controller restart recomputes the same name
    assert job_name(name, UID, 3, DIGEST, CLAIM_UID) == round_3


# -- reading annotations back ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 1),
        ("", 1),
        ("1", 1),
        ("4", 4),
        (" 12 ", 12),
        ("0", 1),
        ("-3", 1),
        ("x", 1),
        ("2.5", 1),
    ],
)
def test_round_and_attempt_parse(value: str | None, expected: int) -> None:
    job = with_annotations() if value is None else with_annotations(**{ANNOTATION_ROUND: value})
    assert round_of(job) == expected
    job = with_annotations() if value is None else with_annotations(**{ANNOTATION_ATTEMPT: value})
    assert attempt_of(job) == expected


@pytest.mark.parametrize("job", [{}, {"metadata": None}, {"metadata": {"annotations": None}}])
def test_annotations_of_a_bare_object(job: Obj) -> None:
    assert annotation(job, ANNOTATION_SPEC) is None
    assert (round_of(job), attempt_of(job), known_of(job)) == (1, 1, None)


@pytest.mark.parametrize("value", ["", "garbage", "1:2", "a:2:abc", "1:b:abc", "1:2:3:4"])
def test_unreadable_known_is_none(value: str) -> None:
    assert known_of(with_annotations(**{ANNOTATION_KNOWN: value})) is None


def test_known_round_trips() -> None:
    assert Known.parse(KNOWN.render()) == KNOWN
    assert Known.parse(f"1:2.5:{'AB' * 32}") == Known(1, 2.5, "ab" * 32)
    assert Verdict(3, 4.25, SHA, None, True).known == Known(3, 4.25, SHA)


# -- verify_jobs / split ---------------------------------------------------------------------------


def test_verify_jobs_are_this_models_verify_jobs() -> None:
    mine = [body(round_=1), body(round_=2)]
    other_model = body(uid="someone-else")
    download = body(round_=3)
    download["metadata"]["labels"][LABEL_COMPONENT] = "llmkube-download"
    unlabelled = body(round_=4)
    del unlabelled["metadata"]["labels"]
    orphan = body(round_=5)
    orphan["metadata"]["ownerReferences"] = []
    jobs = [other_model, mine[0], download, {}, unlabelled, orphan, mine[1]]
    assert verify_jobs(jobs, UID) == mine
    assert verify_jobs(jobs, "nobody") == []


def test_split_by_spec_and_claim_and_sorts_rounds() -> None:
    r3, r1, r2 = body(round_=3), body(round_=1), body(round_=2)
    old_spec = body(round_=4, digest="0000000000000000")
    old_claim = body(round_=5, claim_uid="previous-claim")
    no_annotations: Obj = {"metadata": {"name": "x"}}
    current, stale = split([r3, old_spec, r1, old_claim, no_annotations, r2], DIGEST, CLAIM_UID)
    assert current == [r1, r2, r3]
    assert [round_of(j) for j in current] == [1, 2, 3]
    assert stale == [old_spec, old_claim, no_annotations]


def test_split_unparseable_round_sorts_first() -> None:
    bad = body(round_=2)
    bad["metadata"]["annotations"][ANNOTATION_ROUND] = "two"
    r3 = body(round_=3)
    current, stale = split([r3, bad], DIGEST, CLAIM_UID)
    assert current == [bad, r3]
    assert round_of(bad) == 1
    assert stale == []


def test_split_of_nothing() -> None:
    assert split([], DIGEST, CLAIM_UID) == ([], [])


# -- read_verdict ----------------------------------------------------------------------------------

OK: Obj = {
    "result": "ok",
    "size": 4_294_967_296,
    "mtime": 1_700_000_000.5,
    "sha256": SHA,
    "gguf": {"architecture": "llama"},
    "hashed": True,
}


def ok(**changes: Any) -> Obj:
    return {**OK, **changes}


def without(key: str) -> Obj:
    return {k: v for k, v in OK.items() if k != key}


@pytest.mark.parametrize(
    ("parsed", "expected"),
    [
        (OK, Verdict(4_294_967_296, 1_700_000_000.5, SHA, {"architecture": "llama"}, True)),
        (ok(gguf=None, hashed=False), Verdict(4_294_967_296, 1_700_000_000.5, SHA, None, False)),
        (ok(size=0, mtime=1_700_000_000), Verdict(0, 1_700_000_000.0, SHA, {"architecture": "llama"}, True)),
        (without("gguf"), Verdict(4_294_967_296, 1_700_000_000.5, SHA, None, True)),
    ],
    ids=["ok", "not-gguf-not-hashed", "int-mtime", "gguf-absent"],
)
def test_ok_verdict(parsed: Obj, expected: Verdict) -> None:
    verdict = read_verdict(parsed)
    assert verdict == expected
    assert isinstance(verdict, Verdict)
    assert type(verdict.mtime) is float


def test_error_verdict() -> None:
    parsed = {"result": "error", "reason": "SourceNotFound", "message": "/model-source/x does not exist"}
    assert read_verdict(parsed) == Refusal("SourceNotFound", "/model-source/x does not exist")


def test_error_message_is_truncated() -> None:
    verdict = read_verdict({"result": "error", "reason": "ReadFailed", "message": "x" * 10_000})
    assert verdict == Refusal("ReadFailed", "x" * 500)


MALFORMED: list[tuple[str, Any]] = [
    ("none", None),
    ("empty", {}),
    ("no-result", without("result")),
    ("unknown-result", ok(result="maybe")),
    ("result-case", ok(result="OK")),
    ("bool-size", ok(size=True)),
    ("negative-size", ok(size=-1)),
    ("float-size", ok(size=1.5)),
    ("string-size", ok(size="12")),
    ("missing-size", without("size")),
    ("bool-mtime", ok(mtime=False)),
    ("string-mtime", ok(mtime="1700000000")),
    ("missing-mtime", without("mtime")),
    ("short-sha", ok(sha256="0f" * 31)),
    ("long-sha", ok(sha256="0f" * 33)),
    ("uppercase-sha", ok(sha256="0F" * 32)),
    ("non-hex-sha", ok(sha256="g" * 64)),
    ("int-sha", ok(sha256=12)),
    ("missing-sha", without("sha256")),
    ("list-gguf", ok(gguf=["llama"])),
    ("string-gguf", ok(gguf="llama")),
    ("error-reason-with-space", {"result": "error", "reason": "Not Found", "message": "m"}),
    ("error-reason-empty", {"result": "error", "reason": "", "message": "m"}),
    ("error-reason-not-str", {"result": "error", "reason": 404, "message": "m"}),
    ("error-reason-missing", {"result": "error", "message": "m"}),
    ("error-message-missing", {"result": "error", "reason": "ReadFailed"}),
    ("error-message-not-str", {"result": "error", "reason": "ReadFailed", "message": ["m"]}),
]


@pytest.mark.parametrize("parsed", [c[1] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_verdict_is_none(parsed: Any) -> None:
    assert read_verdict(parsed) is None


# -- inspect ---------------------------------------------------------------------------------------


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "model.gguf", extra_tensors=2)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_inspect_hashes_and_reads_the_header(model_file: Path) -> None:
    st = os.stat(model_file)
    verdict = inspect(str(model_file), None)
    assert verdict == {
        "result": "ok",
        "size": st.st_size,
        "mtime": st.st_mtime,
        "sha256": sha256_of(model_file),
        "gguf": {**EXPECTED_STATUS, "tensorCount": 5},
        "hashed": True,
    }
    assert verdict["size"] == model_file.stat().st_size > 0


def test_inspect_reads_in_chunks(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspect_mod, "CHUNK", 1021)  # many reads, the last one partial
    assert os.stat(model_file).st_size > 10 * 1021
    assert inspect(str(model_file), None)["sha256"] == sha256_of(model_file)


def test_known_unchanged_file_is_not_read_again(model_file: Path) -> None:
    st = os.stat(model_file)
    fake = "a" * 64
    verdict = inspect(str(model_file), Known(st.st_size, st.st_mtime, fake))
    assert verdict["sha256"] == fake  # the recorded digest, so the bytes were not hashed
    assert verdict["hashed"] is False
    assert (verdict["size"], verdict["mtime"]) == (st.st_size, st.st_mtime)
    assert verdict["gguf"] == {**EXPECTED_STATUS, "tensorCount": 5}  # the header is always re-read


def test_known_changed_size_is_hashed_again(model_file: Path) -> None:
    st = os.stat(model_file)
    verdict = inspect(str(model_file), Known(st.st_size + 1, st.st_mtime, "a" * 64))
    assert verdict["sha256"] == sha256_of(model_file)
    assert verdict["hashed"] is True


def test_known_changed_mtime_is_hashed_again(model_file: Path) -> None:
    st = os.stat(model_file)
    known = Known(st.st_size, st.st_mtime, "a" * 64)
    os.utime(model_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    verdict = inspect(str(model_file), known)
    assert verdict["sha256"] == sha256_of(model_file)
    assert verdict["hashed"] is True
    assert verdict["mtime"] == os.stat(model_file).st_mtime != known.mtime


def test_same_size_rewrite_with_new_mtime_is_detected(model_file: Path) -> None:
    first = inspect(str(model_file), None)
    data = bytearray(model_file.read_bytes())
    data[-1] ^= 0xFF  # tensor data: still a valid header, same size
    model_file.write_bytes(bytes(data))
    st = os.stat(model_file)
    os.utime(model_file, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    verdict = read_verdict(first)
    assert isinstance(verdict, Verdict)
    second = inspect(str(model_file), verdict.known)
    assert second["hashed"] is True
    assert second["size"] == first["size"]
    assert second["sha256"] == sha256_of(model_file) != first["sha256"]


def test_inspect_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"not a gguf file at all" * 100)
    verdict = inspect(str(path), None)
    assert verdict["result"] == "ok"
    assert verdict["gguf"] is None
    assert verdict["sha256"] == sha256_of(path)
    assert verdict["size"] == 2200


def test_inspect_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    verdict = inspect(str(path), None)
    assert (verdict["result"], verdict["size"], verdict["gguf"]) == ("ok", 0, None)
    assert verdict["sha256"] == hashlib.sha256(b"").hexdigest()


def test_inspect_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.gguf"
    verdict = inspect(str(path), None)
    assert verdict == {
        "result": "error",
        "reason": "SourceNotFound",
        "message": f"{path} does not exist in the claim",
    }


def test_inspect_directory(tmp_path: Path) -> None:
    verdict = inspect(str(tmp_path), None)
    assert verdict["result"] == "error"
    assert verdict["reason"] == "InvalidSource"
    assert str(tmp_path) in verdict["message"]


def test_inspect_read_error_while_hashing(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read error while hashing (file modes are not used: root, as in CI, ignores them)."""

    def denied(f: Any) -> Any:
        raise PermissionError(13, "Permission denied", f.name)

    monkeypatch.setattr(inspect_mod, "_sha256", denied)
    assert inspect(str(model_file), None) == {
        "result": "error",
        "reason": "ReadFailed",
        "message": f"cannot read {model_file}: Permission denied",
    }


def test_inspect_unopenable_file_with_a_known_digest_is_a_read_failure(
    model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the workload cannot read is not described by a digest recorded earlier."""
    st = os.stat(model_file)
    known = Known(st.st_size, st.st_mtime, "a" * 64)
    assert inspect(str(model_file), known)["hashed"] is False

    def denied(path: str, mode: str = "r") -> Any:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(inspect_mod, "open", denied, raising=False)
    assert inspect(str(model_file), known) == {
        "result": "error",
        "reason": "ReadFailed",
        "message": f"cannot read {model_file}: Permission denied",
    }


# -- main ------------------------------------------------------------------------------------------


def one_line(capsys: pytest.CaptureFixture[str]) -> Any:
    out, err = capsys.readouterr()
    assert err == ""
    assert out.endswith("\n")
    lines = out.splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


def test_main_ok(model_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(model_file)]) == 0
    parsed = one_line(capsys)
    assert parsed == inspect(str(model_file), None)
    verdict = read_verdict(parsed)
    assert isinstance(verdict, Verdict)
    assert verdict.sha256 == sha256_of(model_file)
    assert verdict.mtime == os.stat(model_file).st_mtime


def test_main_known_round_trip(model_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    st = os.stat(model_file)  # a fractional mtime must survive JSON, the annotation and argv
    os.utime(model_file, ns=(st.st_atime_ns, 1_700_000_000_123_456_789))
    assert main([str(model_file)]) == 0
    first = read_verdict(one_line(capsys))
    assert isinstance(first, Verdict)
    assert first.hashed is True
    job = body(known=first.known)
    [arg] = job["spec"]["template"]["spec"]["containers"][0]["args"][1:]
    known = known_of(job)
    assert known == first.known
    assert main([str(model_file), arg]) == 0
    second = read_verdict(one_line(capsys))
    assert second == Verdict(first.size, first.mtime, first.sha256, first.gguf, False)


def test_main_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing.gguf"
    assert main([str(path)]) == 1
    assert read_verdict(one_line(capsys)) == Refusal("SourceNotFound", f"{path} does not exist in the claim")


@pytest.mark.parametrize("known", ["garbage", "1:2", "1:x:" + SHA, "one:2:" + SHA, "1:2:3:4"])
def test_main_bad_known_is_a_usage_error(
    model_file: Path, known: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([str(model_file), f"--known={known}"])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "--known must be SIZE:MTIME:SHA256" in err


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "aim-model-inspect"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "aim_cache_jobs.inspect"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60, check=False)


def test_console_script_round_trips(model_file: Path, tmp_path: Path) -> None:
    done = run_cli(str(model_file))
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    verdict = read_verdict(json.loads(line))
    assert verdict == Verdict(
        size=model_file.stat().st_size,
        mtime=os.stat(model_file).st_mtime,
        sha256=sha256_of(model_file),
        gguf={**EXPECTED_STATUS, "tensorCount": 5},
        hashed=True,
    )

    again = run_cli(str(model_file), f"--known={verdict.known.render()}")
    assert again.returncode == 0, again.stderr
    assert read_verdict(json.loads(again.stdout.splitlines()[-1])) == Verdict(
        verdict.size, verdict.mtime, verdict.sha256, verdict.gguf, False
    )

    missing = run_cli(str(tmp_path / "gone.gguf"))
    assert missing.returncode == 1
    refusal = read_verdict(json.loads(missing.stdout.splitlines()[-1]))
    assert isinstance(refusal, Refusal)
    assert refusal.reason == "SourceNotFound"
