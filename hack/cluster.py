#!/usr/bin/env python3
"""Start and stop the local Kubernetes control plane used by tests, demo and benchmarks.

The cluster is real: etcd, kube-apiserver (TLS, RBAC, token auth, loopback only),
kube-controller-manager with its default controllers, kube-scheduler, and kwok
playing the kubelet for a few fake nodes. Only the binaries built by
hack/build-binaries.sh are used.

    hack/cluster.py up   [--dir DIR] [--nodes N] [--apiserver-arg=--flag=value ...]
    hack/cluster.py restart-apiserver [--dir DIR] [--down-seconds N] [--crash]   (only its kube-apiserver)
    hack/cluster.py down [--dir DIR]
    hack/cluster.py status [--dir DIR]

`up` prints the kubeconfig path on stdout (progress goes to stderr) and is a
no-op when the cluster in DIR is already healthy. `down` stops exactly the
processes `up` started, identified by PID and start time, so a recycled PID is
never signalled. Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".bin"
DEFAULT_DIR = ROOT / ".cluster" / "default"
STAGES = ROOT / "hack" / "kwok" / "stages.yaml"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")

#: Annotation kwok uses to pick the nodes it plays the kubelet for.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"

ADMIN_CONTEXT = "rollout-plus-local"
OPERATOR_CONTEXT = "rollout-plus-operator"
VIEWER_CONTEXT = "rollout-plus-viewer"
NOBODY_CONTEXT = "rollout-plus-nobody"


class ClusterError(Exception):
    """A failure a person can act on; printed as one line, no traceback."""


@dataclass
class Process:
    name: str
    pid: int
    start_ticks: int  # field 22 of /proc/PID/stat: tells a recycled PID apart


@dataclass
class State:
    ports: dict[str, int]
    tokens: dict[str, str]
    nodes: int
    #: what `up` was asked for beyond the defaults; a different ask restarts the cluster
    options: dict[str, object] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)
    started_at: float = 0.0

    @classmethod
    def load(cls, path: Path) -> State | None:
        try:
            raw = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        raw["processes"] = [Process(**p) for p in raw.get("processes", [])]
        return cls(**raw)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)


def log(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


# --- processes ----------------------------------------------------------------


def start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces; fields after it are plain.
    return int(stat.rsplit(")", 1)[1].split()[19])


def is_running(proc: Process) -> bool:
    return start_ticks(proc.pid) == proc.start_ticks


def spawn(name: str, argv: list[str], workdir: Path) -> Process:
    logfile = open(workdir / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
    child = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=logfile,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        start_new_session=True,  # a Ctrl-C in the caller's terminal must not reach it
    )
    logfile.close()
    ticks = start_ticks(child.pid)
    if ticks is None:
        raise ClusterError(f"{name} exited at once; see {workdir / 'logs' / (name + '.log')}")
    return Process(name=name, pid=child.pid, start_ticks=ticks)


def stop(processes: list[Process], timeout: float = 10.0) -> None:
    """Stop in reverse start order, each before the next: the API server shuts
    down cleanly only while etcd is still there."""
    for proc in reversed(processes):
        if not is_running(proc):
            continue
        os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while is_running(proc) and time.monotonic() < deadline:
            reap_children()
            time.sleep(0.05)
        if is_running(proc):
            log(f"{proc.name} (pid {proc.pid}) ignored SIGTERM for {timeout:.0f}s; killing it")
            os.kill(proc.pid, signal.SIGKILL)


def reap_children() -> None:
    # Children we spawned and that exited are zombies until waited for; a zombie
    # still has /proc/PID/stat and would look alive.
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# --- files ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise ClusterError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def write_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate and the service-account key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=rollout-plus-local-ca",
        cwd=pki,
    )
    (pki / "apiserver.ext").write_text(
        "basicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "apiserver.key",
        "-out",
        "apiserver.csr",
        "-subj",
        "/CN=kube-apiserver",
        cwd=pki,
    )
    openssl(
        "x509",
        "-req",
        "-in",
        "apiserver.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "apiserver.crt",
        "-days",
        "3650",
        "-extfile",
        "apiserver.ext",
        cwd=pki,
    )
    openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


#: user name, groups — the users of the token file.
USERS = {
    "admin": ("admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", ""),
    "scheduler": ("system:kube-scheduler", ""),
    "kwok": ("kwok", "system:masters"),
    # cluster-admin through RBAC, not system:masters: subject to max-in-flight
    # limits and priority and fairness like a real operator's account.
    "operator": ("operator", "rollout-plus:operators"),
    # Read-only everywhere (the `view` ClusterRole); for RBAC tests.
    "viewer": ("viewer", "rollout-plus:viewers"),
    # No permission at all beyond discovery.
    "nobody": ("nobody", ""),
}


def write_token_file(path: Path, tokens: dict[str, str]) -> None:
    lines = []
    for key, (user, groups) in USERS.items():
        lines.append(f'{tokens[key]},{user},uid-{key},"{groups}"')
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)


def kubeconfig(server: str, ca: Path, users: dict[str, str], current: str) -> str:
    """A kubeconfig with one context per (context name -> token)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "rollout-plus-local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": name, "user": {"token": token}} for name, token in users.items()],
        "contexts": [{"name": name, "context": {"cluster": "rollout-plus-local", "user": name}} for name in users],
        "current-context": current,
    }
    return json.dumps(doc, indent=2)  # JSON is YAML; no PyYAML needed here


# --- health ----------------------------------------------------------------------


def http_ok(url: str, *, token: str | None = None, ca: Path | None = None) -> bool:
    context = None
    if url.startswith("https"):
        # kube-controller-manager and kube-scheduler serve /healthz with a
        # self-signed certificate of their own making, hence no CA for them.
        context = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def wait_until(what: str, check, timeout: float, processes: list[Process], workdir: Path) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        reap_children()
        for proc in processes:
            if not is_running(proc):
                tail = (workdir / "logs" / f"{proc.name}.log").read_text(errors="replace").splitlines()[-15:]
                raise ClusterError(
                    f"{proc.name} exited while waiting for {what}; last lines of its log:\n  " + "\n  ".join(tail)
                )
        time.sleep(0.2)
    raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}; logs are in {workdir / 'logs'}")


def kubectl(kubeconfig_path: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(BIN / "kubectl"), f"--kubeconfig={kubeconfig_path}", *args],
        input=stdin,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise ClusterError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def node_manifest(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
    }


CLUSTER_RBAC = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "rollout-plus:operators"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "rollout-plus:operators"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "rollout-plus:viewers"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "rollout-plus:viewers"}],
        },
    ],
}


# --- the steps of `up` ---------------------------------------------------------


def ensure_binaries() -> None:
    if all((BIN / name).exists() for name in BINARIES):
        return
    log("binaries missing; running hack/build-binaries.sh")
    subprocess.run([str(ROOT / "hack" / "build-binaries.sh")], check=True, stdout=sys.stderr)


def healthy(state: State, workdir: Path) -> bool:
    return all(is_running(p) for p in state.processes) and http_ok(
        f"https://127.0.0.1:{state.ports['apiserver']}/readyz",
        token=state.tokens["admin"],
        ca=workdir / "pki" / "ca.crt",
    )


@dataclass
class ControlPlane:
    """What the steps of `up` share: the cluster folder and its state (ports, tokens, the processes started)."""

    workdir: Path
    state: State

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.state.ports['apiserver']}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    def start(self, name: str, argv: list[str]) -> None:
        """Start one process and record it at once, so `down` (or a failed `up`) stops it."""
        self.state.processes.append(spawn(name, argv, self.workdir))
        self.state.save(self.workdir / "state.json")

    def wait_until(self, what: str, check, timeout: float) -> None:  # type: ignore[no-untyped-def]
        wait_until(what, check, timeout, self.state.processes, self.workdir)


def reuse_or_stop(workdir: Path, nodes: int, options: dict[str, object]) -> bool:
    """True when the cluster in ``workdir`` is healthy and was started with the same ask; else stop what is left."""
    previous = State.load(workdir / "state.json")
    if previous is None:
        return False
    if healthy(previous, workdir) and previous.nodes == nodes and previous.options == options:
        log(f"already running in {workdir}")
        return True
    log(f"restarting the cluster in {workdir}")
    stop(previous.processes)
    return False


def empty_folder(workdir: Path) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
    (workdir / "logs").mkdir(parents=True)


def write_tokens(workdir: Path) -> dict[str, str]:
    """A fresh token for each user of ``USERS``, in the API server's token file."""
    tokens = {key: secrets.token_hex(16) for key in USERS}
    write_token_file(workdir / "tokens.csv", tokens)
    return tokens


def free_ports() -> dict[str, int]:
    return {name: free_port() for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok")}


def write_kubeconfigs(plane: ControlPlane) -> None:
    """The people's kubeconfig (one context per test user, admin current) and one per component."""
    tokens = plane.state.tokens
    plane.admin_kubeconfig.write_text(
        kubeconfig(
            plane.server,
            plane.pki / "ca.crt",
            {
                ADMIN_CONTEXT: tokens["admin"],
                OPERATOR_CONTEXT: tokens["operator"],
                VIEWER_CONTEXT: tokens["viewer"],
                NOBODY_CONTEXT: tokens["nobody"],
            },
            ADMIN_CONTEXT,
        )
    )
    plane.admin_kubeconfig.chmod(0o600)
    for component in ("controller-manager", "scheduler", "kwok"):
        path = plane.workdir / f"{component}.kubeconfig"
        path.write_text(kubeconfig(plane.server, plane.pki / "ca.crt", {component: tokens[component]}, component))
        path.chmod(0o600)


def etcd_url(plane: ControlPlane) -> str:
    return f"http://127.0.0.1:{plane.state.ports['etcd']}"


def start_etcd(plane: ControlPlane) -> None:
    url, peer = etcd_url(plane), f"http://127.0.0.1:{plane.state.ports['etcd-peer']}"
    plane.start(
        "etcd",
        [
            str(BIN / "etcd"),
            "--name=default",
            f"--data-dir={plane.workdir / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            # A throwaway test cluster: durability is not worth an fsync per write.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )
    plane.wait_until("etcd", lambda: http_ok(f"{url}/health"), 30)


def audit_flags(workdir: Path) -> list[str]:
    """Benchmarks count each client's requests from the audit log: every request at Metadata level."""
    (workdir / "audit-policy.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata"}],
            }
        )
    )
    return [
        f"--audit-policy-file={workdir / 'audit-policy.yaml'}",
        f"--audit-log-path={workdir / 'logs' / 'audit.log'}",
        "--audit-log-mode=batch",
        # Never rotated: the benchmarks read this one file, and the writer (lumberjack) would rotate it at
        # 100 MB when the flag is 0, its default, leaving a long run's early requests in another file.
        "--audit-log-maxsize=1000000",
    ]


def start_apiserver(plane: ControlPlane, extra_args: list[str], *, audit: bool) -> None:
    pki = plane.pki
    argv = [
        str(BIN / "kube-apiserver"),
        f"--etcd-servers={etcd_url(plane)}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={plane.state.ports['apiserver']}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--token-auth-file={plane.workdir / 'tokens.csv'}",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-cluster-ip-range=10.96.0.0/16",
        # The "kubernetes" Service cannot point at a loopback address.
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        "--profiling=false",
    ]
    if audit:
        argv += audit_flags(plane.workdir)
    plane.start("kube-apiserver", argv + extra_args)
    plane.wait_until(
        "kube-apiserver",
        lambda: http_ok(f"{plane.server}/readyz", token=plane.state.tokens["admin"], ca=pki / "ca.crt"),
        90,
    )


def start_controller_manager(plane: ControlPlane, extra_args: list[str]) -> None:
    pki, kubeconfig_path = plane.pki, plane.workdir / "controller-manager.kubeconfig"
    plane.start(
        "kube-controller-manager",
        [
            str(BIN / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig_path}",
            f"--authentication-kubeconfig={kubeconfig_path}",
            f"--authorization-kubeconfig={kubeconfig_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={plane.state.ports['controller-manager']}",
            "--leader-elect=false",
            # Each controller acts as its own service account, as on kubeadm
            # clusters; the audit log can then tell the Deployment controller's
            # requests apart from the ReplicaSet controller's.
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--cluster-name=rollout-plus-local",
            "--controllers=*",
            "--profiling=false",
            *extra_args,
        ],
    )


def start_scheduler(plane: ControlPlane) -> None:
    kubeconfig_path = plane.workdir / "scheduler.kubeconfig"
    plane.start(
        "kube-scheduler",
        [
            str(BIN / "kube-scheduler"),
            f"--kubeconfig={kubeconfig_path}",
            f"--authentication-kubeconfig={kubeconfig_path}",
            f"--authorization-kubeconfig={kubeconfig_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={plane.state.ports['scheduler']}",
            "--leader-elect=false",
            "--profiling=false",
        ],
    )


def start_kwok(plane: ControlPlane) -> None:
    """kwok plays the kubelet of the nodes annotated for it, with the pod stages of hack/kwok/stages.yaml."""
    plane.start(
        "kwok",
        [
            str(BIN / "kwok"),
            f"--kubeconfig={plane.workdir / 'kwok.kubeconfig'}",
            f"--config={STAGES}",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{plane.state.ports['kwok']}",
            "--cidr=10.0.0.1/16",
        ],
    )


def wait_for_controllers(plane: ControlPlane) -> None:
    """The controller manager and the scheduler (started side by side, with kwok) answering on /healthz."""
    ports = plane.state.ports
    plane.wait_until(
        "kube-controller-manager", lambda: http_ok(f"https://127.0.0.1:{ports['controller-manager']}/healthz"), 60
    )
    plane.wait_until("kube-scheduler", lambda: http_ok(f"https://127.0.0.1:{ports['scheduler']}/healthz"), 60)


def add_nodes_and_rbac(plane: ControlPlane, nodes: int) -> None:
    """The kwok nodes and the test users' ClusterRoleBindings, in one apply; then every node Ready."""
    manifests = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [node_manifest(f"kwok-node-{i}") for i in range(nodes)] + CLUSTER_RBAC["items"],
    }
    kubectl(plane.admin_kubeconfig, "apply", "-f", "-", stdin=json.dumps(manifests))
    kubectl(plane.admin_kubeconfig, "wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")


def wait_for_default_service_account(plane: ControlPlane) -> None:
    """The service-account controller creates it; pods cannot be admitted before."""

    def exists() -> bool:
        result = subprocess.run(
            [
                str(BIN / "kubectl"),
                f"--kubeconfig={plane.admin_kubeconfig}",
                "get",
                "serviceaccount",
                "default",
                "-n",
                "default",
            ],
            capture_output=True,
        )
        return result.returncode == 0

    plane.wait_until("the default service account", exists, 60)


# --- commands --------------------------------------------------------------------


def up(
    workdir: Path, nodes: int, apiserver_args: list[str], audit: bool, controller_manager_args: list[str] | None = None
) -> Path:
    workdir = workdir.resolve()
    controller_manager_args = controller_manager_args or []
    options: dict[str, object] = {"apiserver_args": apiserver_args, "audit": audit}
    if controller_manager_args:
        options["controller_manager_args"] = controller_manager_args
    if reuse_or_stop(workdir, nodes, options):
        return workdir / "kubeconfig"

    ensure_binaries()
    empty_folder(workdir)
    began = time.monotonic()
    write_pki(workdir / "pki")
    tokens = write_tokens(workdir)
    state = State(ports=free_ports(), tokens=tokens, nodes=nodes, options=options, started_at=time.time())
    plane = ControlPlane(workdir, state)
    write_kubeconfigs(plane)
    try:
        start_etcd(plane)
        start_apiserver(plane, apiserver_args, audit=audit)
        start_controller_manager(plane, controller_manager_args)
        start_scheduler(plane)
        start_kwok(plane)
        wait_for_controllers(plane)
        add_nodes_and_rbac(plane, nodes)
        wait_for_default_service_account(plane)
    except BaseException:
        stop(state.processes)
        raise

    log(f"up in {time.monotonic() - began:.1f}s: {plane.server}, {nodes} kwok nodes, logs in {workdir / 'logs'}")
    return plane.admin_kubeconfig


def down(workdir: Path) -> None:
    state = State.load(workdir.resolve() / "state.json")
    if state is None:
        log(f"nothing to stop in {workdir}")
        return
    stop(state.processes)
    state.processes = []
    state.save(workdir.resolve() / "state.json")
    log(f"stopped the cluster in {workdir}")


def restart_apiserver(workdir: Path, down_seconds: float, *, crash: bool = False) -> str:
    """Stop this cluster's kube-apiserver (its recorded pid only), keep it down, start it with the same argv.

    For the outage tests: the port, certificates and etcd stay, so clients reconnect to the same URL. A stop
    is graceful (SIGTERM: the server goes on answering for up to 10 s while it shuts down, then SIGKILL); a
    crash is SIGKILL at once, so the outage is exactly ``down_seconds`` (plus the start).
    Returns one line: when it stopped answering, when it was started again, when it was ready (epoch seconds).
    """
    workdir = workdir.resolve()
    state_file = workdir / "state.json"
    state = State.load(state_file)
    proc = next((p for p in state.processes if p.name == "kube-apiserver"), None) if state else None
    if state is None or proc is None or not is_running(proc):
        raise ClusterError(f"no running kube-apiserver recorded in {workdir}; run `hack/cluster.py up --dir {workdir}`")
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    stopped = time.time()
    if crash:
        os.kill(proc.pid, signal.SIGKILL)
        while is_running(proc):
            reap_children()
            time.sleep(0.05)
    else:
        stop([proc])
    reap_children()
    time.sleep(max(0.0, stopped + down_seconds - time.time()))
    started = time.time()
    fresh = spawn("kube-apiserver", [a.decode() for a in argv], workdir)
    state.processes = [fresh if p is proc else p for p in state.processes]
    state.save(state_file)
    wait_until(
        "kube-apiserver",
        lambda: http_ok(
            f"https://127.0.0.1:{state.ports['apiserver']}/readyz",
            token=state.tokens["admin"],
            ca=workdir / "pki" / "ca.crt",
        ),
        90,
        [fresh],
        workdir,
    )
    ready = time.time()
    log(f"kube-apiserver down {started - stopped:.1f}s, ready {ready - started:.1f}s after its start (pid {fresh.pid})")
    return json.dumps({"stopped": stopped, "started": started, "ready": ready, "pid": fresh.pid})


def status(workdir: Path) -> int:
    workdir = workdir.resolve()
    state = State.load(workdir / "state.json")
    if state is None or not state.processes:
        print(f"no cluster in {workdir}")
        return 1
    for proc in state.processes:
        print(f"{proc.name:24} pid {proc.pid:<8} {'running' if is_running(proc) else 'STOPPED'}")
    ok = healthy(state, workdir)
    print(f"apiserver https://127.0.0.1:{state.ports['apiserver']} {'ready' if ok else 'NOT READY'}")
    print(f"kubeconfig {workdir / 'kubeconfig'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up_cmd = sub.add_parser("up", help="start the control plane (or reuse a healthy one)")
    up_cmd.add_argument("--nodes", type=int, default=4, help="number of kwok nodes (default 4)")
    up_cmd.add_argument(
        "--apiserver-arg",
        action="append",
        default=[],
        metavar="--FLAG=VALUE",
        help="extra kube-apiserver flag; repeatable",
    )
    up_cmd.add_argument(
        "--controller-manager-arg",
        action="append",
        default=[],
        metavar="--FLAG=VALUE",
        help="extra kube-controller-manager flag, e.g. --controllers=*,-disruption; repeatable",
    )
    up_cmd.add_argument("--audit", action="store_true", help="write an audit log (logs/audit.log)")
    restart_cmd = sub.add_parser(
        "restart-apiserver", help="stop this cluster's kube-apiserver, keep it down, start it again (outage tests)"
    )
    restart_cmd.add_argument(
        "--down-seconds", type=float, default=10.0, help="from the stop signal to the new start (default 10)"
    )
    restart_cmd.add_argument(
        "--crash", action="store_true", help="SIGKILL at once instead of a graceful stop (SIGTERM, up to 10 s)"
    )
    for cmd in (
        up_cmd,
        restart_cmd,
        sub.add_parser("down", help="stop the processes `up` started"),
        sub.add_parser("status", help="show the processes and whether the API server is ready"),
    ):
        cmd.add_argument(
            "--dir",
            type=Path,
            default=Path(os.environ.get("ROLLOUT_PLUS_CLUSTER_DIR", DEFAULT_DIR)),
            help="cluster folder: state, PKI, kubeconfig, logs (default .cluster/default)",
        )
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            print(up(args.dir, args.nodes, args.apiserver_arg, args.audit, args.controller_manager_arg))
        elif args.command == "down":
            down(args.dir)
        elif args.command == "restart-apiserver":
            print(restart_apiserver(args.dir, args.down_seconds, crash=args.crash))
        else:
            return status(args.dir)
    except ClusterError as err:
        log(f"error: {err}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
