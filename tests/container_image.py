"""Real podman containers for tests, built here: no registry is reachable, no daemon runs.

Two images, each built once per test session and removed at its end:

* **busybox**: a static ``/bin/busybox`` and its applet links, ``podman import``ed. It has
  ``sh`` (ash) but no bash: the lowest common denominator a backend must cope with.
* **host-like**: an almost empty root whose ``/usr`` is this machine's, bind-mounted
  read-only when a container starts (Debian's ``/bin``, ``/lib`` … are links into ``/usr``),
  so bash, tmux and python exist inside without copying anything.

crun fails on this machine kind (rlimits, hybrid cgroups), so a ``containers.conf`` selecting
runc with low ulimits is written and ``CONTAINERS_CONF`` points every podman call at it,
the backend's included. Names carry a random suffix and every object is labelled with its
test process's pid: concurrent runs share the podman store, and a run that was killed before
its finalisers ran is cleaned up by the next one. ``tests/conftest.py`` loads this module as
a plugin, so the fixtures are available to every test module.
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
import subprocess
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ENGINE = "podman"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
"""
INSTALL_HINT = "apt-get install -y podman runc busybox-static"
LONG_SLEEP = "1000000"
"""pid 1 of every test container: sleeps, and is killed at once by ``podman rm -f -t 0``."""
OWNER_LABEL = "agent-tui-test-owner"
"""Label on every image and container made here: the pid of the test process that made it."""


def podman_missing_reason() -> str | None:
    """Why container tests cannot run here, or None when they can."""
    if shutil.which(ENGINE) is None:
        return f"podman is not installed ({INSTALL_HINT})"
    if shutil.which("runc") is None:
        return f"runc is not installed ({INSTALL_HINT})"
    if shutil.which("busybox") is None:
        return f"busybox is not installed ({INSTALL_HINT})"
    return None


def podman(*args: str, check: bool = True, timeout: float = 120.0) -> str:
    """Run one podman command; its stdout. Fails the test with podman's own words."""
    completed = subprocess.run(
        [ENGINE, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and completed.returncode != 0:
        pytest.fail(f"podman {' '.join(args)} failed: {completed.stderr.strip()}")
    return completed.stdout


def write_containers_conf(directory: Path) -> Path:
    path = directory / "containers.conf"
    path.write_text(CONTAINERS_CONF)
    return path


def unique(prefix: str) -> str:
    return f"agent-tui-test-{prefix}-{secrets.token_hex(4)}"


def _entry(
    name: str, kind: bytes, *, mode: int = 0o755, size: int = 0, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = link
    return info


def _rootfs(files: dict[str, bytes], links: dict[str, str], dirs: Sequence[str]) -> bytes:
    """An uncompressed tar of a root file system, made in memory (no temp tree to clean)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for directory in dirs:
            mode = 0o1777 if directory in ("tmp", "var/tmp") else 0o755
            archive.addfile(_entry(directory, tarfile.DIRTYPE, mode=mode))
        for name, data in files.items():
            archive.addfile(_entry(name, tarfile.REGTYPE, size=len(data)), io.BytesIO(data))
        for name, target in links.items():
            archive.addfile(_entry(name, tarfile.SYMTYPE, link=target))
    return buffer.getvalue()


_BASE_DIRS = ("dev", "etc", "proc", "root", "run", "sys", "tmp", "var", "var/tmp")
_ETC = {"etc/passwd": b"root:x:0:0:root:/root:/bin/sh\n", "etc/group": b"root:x:0:\n"}


def busybox_rootfs() -> bytes:
    busybox = Path(shutil.which("busybox") or "/bin/busybox").read_bytes()
    applets = subprocess.run(
        ["busybox", "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    links = {f"bin/{applet}": "busybox" for applet in applets if applet != "busybox"}
    return _rootfs({"bin/busybox": busybox, **_ETC}, links, ("bin", *_BASE_DIRS))


def hostlike_rootfs() -> bytes:
    links = {name: f"usr/{name}" for name in ("bin", "sbin", "lib", "lib64") if _in_usr(name)}
    return _rootfs(dict(_ETC), links, ("usr", *_BASE_DIRS))


def _in_usr(name: str) -> bool:
    return Path("/", name).is_symlink() or Path("/usr", name).is_dir()


def import_image(tag: str, rootfs: bytes, workdir: Path) -> str:
    archive = workdir / f"{tag.rsplit('/', 1)[-1].replace(':', '-')}.tar"
    archive.write_bytes(rootfs)
    podman(
        "import",
        *("--change", f"ENV {PATH_ENV}", "--change", f"LABEL {OWNER_LABEL}={os.getpid()}"),
        *(str(archive), tag),
    )
    archive.unlink()
    return tag


def remove_stale() -> None:
    """Remove test containers and images whose owning test process is gone.

    Finalisers do not run when a test run is killed (a CI timeout, say); the next run then
    cleans up after it. Only dead owners' objects go: concurrent runs share the store.
    """
    owner = '{{index .Labels "' + OWNER_LABEL + '"}}'
    kinds = (  # containers first: an image in use cannot go
        (["ps", "-a"], "{{.Names}}", ["rm", "-f", "-t", "0"]),
        (["images"], "{{.ID}}", ["rmi", "-f"]),
    )
    for listing, ident, remove in kinds:
        found = podman(
            *listing,
            "--filter",
            f"label={OWNER_LABEL}",
            "--format",
            f"{ident} {owner}",
            check=False,
        )
        for line in found.splitlines():
            name, _, pid = line.partition(" ")
            if pid.isdigit() and not _alive(int(pid)):
                podman(*remove, name, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Images:
    busybox: str
    hostlike: str


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    has_bash: bool


def start_container(
    image: str, *, hostlike: bool, volumes: Sequence[tuple[Path, str]] = ()
) -> Container:
    """``podman run -d`` a long-lived container; remove it with ``remove_container``."""
    name = unique("ctr")
    args = ["run", "-d", "--name", name, "--label", f"{OWNER_LABEL}={os.getpid()}"]
    if hostlike:
        args += ["-v", "/usr:/usr:ro"]
    for source, target in volumes:
        args += ["-v", f"{source}:{target}"]
    podman(*args, image, "sleep", LONG_SLEEP)
    return Container(name, image, has_bash=hostlike)


def remove_container(name: str) -> None:
    podman("rm", "-f", "-t", "0", name, check=False)


def live_processes(name: str, needle: str) -> list[str]:
    """``pid cmdline`` of live (not zombie) processes in the container whose command line
    contains ``needle``, read from the container's own ``/proc`` by a fresh exec.

    The needle reaches the probe in two arguments, so the probe never matches itself.
    """
    script = (
        'n="$1$2"; for p in /proc/[0-9]*; do s=$(cat "$p/stat" 2>/dev/null) || continue; '
        's=${s##*) }; case "$s" in Z*|X*) continue;; esac; '
        'c=$(tr "\\000" " " < "$p/cmdline" 2>/dev/null); '
        'case "$c" in *"$n"*) echo "${p#/proc/} $c";; esac; done'
    )
    half = len(needle) // 2
    return podman("exec", name, "sh", "-c", script, "probe", needle[:half], needle[half:]).split(
        "\n"
    )[:-1]


@pytest.fixture(scope="session")
def podman_images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Images]:
    """Both images, built once per session; skips the tests when podman is missing."""
    reason = podman_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("podman")
    suffix = secrets.token_hex(4)
    tags: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTAINERS_CONF", str(write_containers_conf(workdir)))
        remove_stale()
        try:
            for kind, rootfs in (("busybox", busybox_rootfs), ("hostlike", hostlike_rootfs)):
                tag = f"localhost/agent-tui-{kind}:{suffix}"
                tags.append(tag)
                import_image(tag, rootfs(), workdir)
            yield Images(busybox=tags[0], hostlike=tags[1])
        finally:
            for tag in tags:
                podman("rmi", "-f", tag, check=False)


@pytest.fixture(scope="session")
def busybox_container(podman_images: Images) -> Iterator[Container]:
    container = start_container(podman_images.busybox, hostlike=False)
    yield container
    remove_container(container.name)


@pytest.fixture(scope="session")
def hostlike_container(podman_images: Images) -> Iterator[Container]:
    container = start_container(podman_images.hostlike, hostlike=True)
    yield container
    remove_container(container.name)


@pytest.fixture(params=["busybox", "hostlike"])
def any_container(request: pytest.FixtureRequest) -> Container:
    """Each shared container in turn: busybox (sh only), then host-like (bash)."""
    container: Container = request.getfixturevalue(f"{request.param}_container")
    return container


@pytest.fixture
def own_container(podman_images: Images) -> Iterator[Container]:
    """A busybox container for this test alone (to stop, start, or break)."""
    container = start_container(podman_images.busybox, hostlike=False)
    yield container
    remove_container(container.name)
