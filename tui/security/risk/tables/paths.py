"""Path tables: which write targets are harmless, which belong to the system, which hold
credentials. Plain data, read by ``risk.write_targets`` and the redirection checks."""

import re

HARMLESS_TARGETS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "-", "/dev/fd/1"}
)
HARMLESS_PREFIXES = ("/dev/fd/", "/dev/shm/", "/proc/self/fd/", "/dev/pts/")
BLOCK_DEVICE = re.compile(
    r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|mapper/|dm-|loop|md|sr|mem$|kmem$|port$)"
)
SYSTEM_PREFIXES = (
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sys",
    "/proc",
    "/dev",
    "/root",
    "/var/lib",
    "/var/spool",
    "/var/log",
    "/System",
    "/Library",
    "/private/etc",
    "/private/var",
)
STARTUP_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".gitconfig",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".inputrc",
    "config.fish",
)
NETWORK_DEVICE = re.compile(r"^/dev/(tcp|udp)/")
"""bash's pseudo-devices: redirecting to one opens a socket."""
CREDENTIALS = re.compile(
    r"(^|/)\.ssh/(id_[^/]*|[^/]*_(rsa|dsa|ecdsa|ed25519))(?<!\.pub)$"
    r"|(^|/)\.(aws/credentials|netrc|pgpass|git-credentials|pypirc|npmrc)$"
    r"|(^|/)\.(docker/config\.json|kube/config|config/gh/hosts\.yml)$"
    r"|(^|/)\.gnupg/|^/etc/(g?shadow|sudoers)$"
)
"""Files whose contents are secrets: reading one hands it to the model and its provider."""
SECRET_DIRS = ("/.ssh/", "/.gnupg/", "/.aws/", "/.kube/", "/.docker/", "/.config/autostart/")
