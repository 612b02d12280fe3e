"""Asking a deployed model a question from this machine, through the address its AIMService's status
gives (the demo, the node tier and the inference benchmark).

An AIMService that is ``Running`` says where it answers in its ``InferenceServiceReady`` condition:
the InferenceService's URL, ``http://<isvc>-<namespace>.<domain>`` (KServe's host naming). On a
cluster an ingress routes that host to the predictor's Service, ``<isvc>-predictor``, port 80. The
local node has neither an ingress nor kube-proxy, and its pod network is private to its namespaces
(docs/node.md), so :func:`forward` does what a user does without an ingress: ``kubectl port-forward``
to that Service (API server → kubelet → one of its pods), and requests carry the status URL's host
as their ``Host`` header, as an ingress would receive them. Nothing here reads pod IPs or names.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aim_dev.local import binaries

READY_CONDITION = "InferenceServiceReady"


class NotServing(RuntimeError):
    """The service gives no address to ask (not Running, or no URL in its status)."""


def service_url(aimsvc: Mapping[str, Any]) -> str:
    """The URL a Running AIMService's status gives (its ``InferenceServiceReady`` message)."""
    status = aimsvc.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == READY_CONDITION and cond.get("status") == "True":
            message = str(cond.get("message") or "")
            if message.startswith(("http://", "https://")):
                return message
    name = (aimsvc.get("metadata") or {}).get("name")
    raise NotServing(f"AIMService {name} gives no address: {READY_CONDITION} is not True with a URL")


def predictor_service(url: str, namespace: str) -> str:
    """The predictor Service behind ``url`` (``http://<isvc>-<namespace>.<domain>``)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    label = host.split(".", 1)[0]
    suffix = f"-{namespace}"
    if not label.endswith(suffix) or len(label) == len(suffix):
        raise NotServing(f"{url} is not an InferenceService URL of namespace {namespace}")
    return f"{label.removesuffix(suffix)}-predictor"


@dataclass(frozen=True)
class Endpoint:
    """Where the forwarded predictor answers on this machine, and the host it is addressed as."""

    base: str
    host: str

    def request(self, path: str, body: Mapping[str, Any] | None = None, timeout: float = 60) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Host": self.host, "Content-Type": "application/json"}
        req = urllib.request.Request(f"{self.base}{path}", data, headers, method="POST" if data else "GET")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def chat(self, question: str, model: str, *, max_tokens: int = 64, **extra: Any) -> str:
        """The answer's text to one user message."""
        body = {"model": model, "messages": [{"role": "user", "content": question}], "max_tokens": max_tokens}
        reply = self.request("/v1/chat/completions", {**body, **extra})
        return str(reply["choices"][0]["message"]["content"])

    def complete(self, prompt: str, model: str, *, max_tokens: int = 64, **extra: Any) -> str:
        """The continuation of ``prompt`` (``/v1/completions``: a base model continues text)."""
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens}
        reply = self.request("/v1/completions", {**body, **extra}, timeout=300)
        return str(reply["choices"][0]["text"])

    def stream(self, body: Mapping[str, Any], timeout: float = 300) -> Streamed:
        """A streamed chat completion: when its first token came, its text, its token count."""
        data = json.dumps({**body, "stream": True}).encode()
        headers = {"Host": self.host, "Content-Type": "application/json"}
        req = urllib.request.Request(f"{self.base}/v1/chat/completions", data, headers)
        start = time.monotonic()
        first: float | None = None
        parts: list[str] = []
        timings: dict[str, Any] | None = None
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            for raw in resp:
                line = raw.decode().strip()
                if not line.startswith("data: {"):
                    continue
                event = json.loads(line[len("data: ") :])
                timings = event.get("timings") or timings  # llama.cpp's, on the last event
                for choice in event.get("choices") or []:
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        first = first if first is not None else time.monotonic()
                        parts.append(text)
        end = time.monotonic()
        text = "".join(parts)
        return Streamed(start, first if first is not None else end, end, text, len(parts), timings)


@dataclass(frozen=True)
class Streamed:
    start: float
    first_token: float
    end: float
    text: str
    tokens: int
    """Content chunks (llama.cpp streams one token per chunk)."""
    timings: dict[str, Any] | None = None
    """llama.cpp's own timings (prompt and generation counts and rates), where it sent them."""


@contextlib.contextmanager
def forward(kubeconfig: Path, namespace: str, url: str, *, timeout: float = 30) -> Iterator[Endpoint]:
    """``kubectl port-forward`` to the predictor Service behind ``url``; yields the endpoint."""
    service = predictor_service(url, namespace)
    with port_forward(kubeconfig, namespace, f"svc/{service}", 80, timeout) as port:
        yield Endpoint(f"http://127.0.0.1:{port}", urllib.parse.urlsplit(url).netloc)


@contextlib.contextmanager
def forward_pod(kubeconfig: Path, namespace: str, pod: str, port: int = 8000) -> Iterator[Endpoint]:
    """One predictor pod (the Service's address reaches any one of them): each replica asked."""
    with port_forward(kubeconfig, namespace, f"pod/{pod}", port, 30) as local:
        yield Endpoint(f"http://127.0.0.1:{local}", f"127.0.0.1:{local}")


@contextlib.contextmanager
def port_forward(
    kubeconfig: Path, namespace: str, target: str, port: int, timeout: float = 30
) -> Iterator[int]:
    """``kubectl port-forward`` to ``target``'s ``port`` (``pod/x``, ``svc/y``); yields the local port.

    The process is stopped and its pipes closed on the way out (an unclosed pipe is a ResourceWarning,
    and the tests take warnings as errors).
    """
    argv = [binaries.kubectl(), "--kubeconfig", str(kubeconfig), "port-forward", "-n", namespace]
    with subprocess.Popen(
        [*argv, target, f":{port}", f"--pod-running-timeout={int(timeout)}s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:NNNNN -> 8000"
            found = re.search(r"127\.0\.0\.1:(\d+)", line)
            if found is None:
                proc.kill()
                raise NotServing(f"kubectl port-forward {target}: {line!r} {proc.communicate()[1]!r}")
            yield int(found.group(1))
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
