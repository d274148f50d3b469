"""An Ansible inventory file read by ansible-core's own parser (the ``ansible`` extra).

Why ansible-core and not a parser of our own: INI and YAML inventories, ``children``, host and
group variables (``group_vars/``, ``host_vars/`` beside the file), ranges like ``web[01:20]``
and the precedence of all of these are Ansible's definitions; ops people's files are written
against them. What we take from it is data only:

* Only the ``ini`` and ``yaml`` inventory plugins are enabled: an executable inventory
  (``script``) or a plugin named by a repository's ``ansible.cfg`` never runs. A private empty
  config file stands in for any ``ansible.cfg``.
* Variables are read, never templated: a value holding ``{{ … }}`` (which Ansible would
  evaluate, lookups and all) is refused with the host's name.
* ansible-core's warnings and messages are collected for the person, never printed over the
  screen.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tui.exec.backend import BackendError
from tui.security.inventory import Inventory, InventoryHost

INSTALL_HINT = "pip install 'agent-tui-cli[ansible]'"
_CONNECTION_VARS = {
    "address": ("ansible_host", "ansible_ssh_host"),
    "port": ("ansible_port", "ansible_ssh_port"),
    "user": ("ansible_user", "ansible_ssh_user"),
    "identity_file": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
}
_ENV = {
    "ANSIBLE_INVENTORY_ENABLED": "ini,yaml",
    "ANSIBLE_VARS_ENABLED": "host_group_vars",
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
    "ANSIBLE_HOST_PATTERN_MISMATCH": "ignore",
    "ANSIBLE_LOCALHOST_WARNING": "False",
    "ANSIBLE_NOCOLOR": "True",
}
_lock = threading.Lock()


class InventoryError(BackendError):
    """The inventory cannot be read (missing file, bad syntax, no ansible-core, a template)."""

    title = "Inventory"


def load_ansible_inventory(path: Path) -> tuple[Inventory, list[str]]:
    """The hosts and groups of ``path`` and what ansible-core said while reading it.

    Blocking (ansible-core imports in ~0.4 s): call it in a thread.

    Raises:
        InventoryError: the file cannot be used, with what to do about it.
    """
    if not path.is_file():
        raise InventoryError(f"inventory {path} is not a file")
    said: list[str] = []
    with _lock, _ansible_environment():
        try:
            from ansible.errors import AnsibleError
            from ansible.inventory.manager import InventoryManager
            from ansible.parsing.dataloader import DataLoader
            from ansible.utils.display import Display
            from ansible.vars.manager import VariableManager
        except ImportError:
            raise InventoryError(
                f"--inventory needs ansible-core, which is not installed: {INSTALL_HINT}"
            ) from None
        display = Display()
        with _collected(display, said):
            try:
                loader = DataLoader()
                manager = InventoryManager(loader=loader, sources=[str(path)])
                variables = VariableManager(loader=loader, inventory=manager)
                # The file's order (``manager.hosts``): the order of ``all`` and of a group
                # with children follows string hashes in ansible-core, a different one each run.
                hosts = [
                    _host(host, variables.get_vars(host=host, include_hostvars=False))
                    for host in manager.hosts.values()
                ]
                place = {host.name: index for index, host in enumerate(hosts)}
                groups = {
                    str(name): sorted(
                        (str(h.name) for h in group.get_hosts()), key=lambda n: place.get(n, 0)
                    )
                    for name, group in manager.groups.items()
                }
            except AnsibleError as error:
                raise InventoryError(
                    f"cannot read inventory {path}: {_first_line(error)}"
                ) from None
    inventory = Inventory(hosts={host.name: host for host in hosts}, groups=groups)
    inventory.groups["all"] = list(inventory.hosts)
    return inventory, said


def _host(host: Any, variables: dict[str, Any]) -> InventoryHost:
    name = str(host.name)
    found: dict[str, str | None] = {}
    for key, names in _CONNECTION_VARS.items():
        value = next((variables[n] for n in names if variables.get(n) not in (None, "")), None)
        text = str(value) if value is not None else ""
        if "{{" in text or "{%" in text:
            raise InventoryError(
                f"host {name}: {names[0]} is a template ({str(value)[:80]!r}); agent-tui reads "
                "inventory variables as they are written and never evaluates templates"
            )
        found[key] = str(value) if value is not None else None
    port: int | None = None
    if found["port"] is not None:
        try:
            port = int(found["port"])
        except ValueError:
            raise InventoryError(
                f"host {name}: ansible_port {found['port']!r} is not a number"
            ) from None
        if not 0 < port < 65536:
            raise InventoryError(f"host {name}: ansible_port {port} is out of range")
    groups = tuple(
        str(group.name) for group in host.get_groups() if str(group.name) not in ("all",)
    )
    return InventoryHost(
        name=name,
        address=found["address"] or name,
        port=port,
        user=found["user"],
        groups=groups or ("ungrouped",),
        identity_file=_expanded(found["identity_file"]),
    )


def _expanded(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None


def _first_line(error: Exception) -> str:
    text = str(getattr(error, "message", None) or error).strip()
    return " ".join(text.splitlines()[:3])[:400]


@contextlib.contextmanager
def _ansible_environment() -> Iterator[None]:
    """ansible-core reads its configuration from the environment when first imported: a
    private empty ``ansible.cfg`` and the plugin choices above, then the environment as it was."""
    with tempfile.TemporaryDirectory(prefix="atui-ansible-") as folder:
        config = Path(folder) / "ansible.cfg"
        config.write_text("")
        wanted = {**_ENV, "ANSIBLE_CONFIG": str(config), "ANSIBLE_LOCAL_TEMP": folder}
        before = {key: os.environ.get(key) for key in wanted}
        os.environ.update(wanted)
        try:
            yield
        finally:
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@contextlib.contextmanager
def _collected(display: Any, said: list[str]) -> Iterator[None]:
    """ansible-core's display writes to the terminal: keep its words instead."""
    names = ("display", "warning", "deprecated", "error", "vvv", "v", "debug")
    saved = {name: getattr(display, name) for name in names if hasattr(display, name)}

    def keep(message: object = "", *args: object, **kwargs: object) -> None:
        text = str(getattr(message, "message", message)).strip()
        if text:
            said.append(text)

    def ignore(*args: object, **kwargs: object) -> None:
        return None

    for name in saved:
        setattr(display, name, keep if name in ("warning", "error") else ignore)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(display, name, method)


__all__ = ["INSTALL_HINT", "InventoryError", "load_ansible_inventory"]
