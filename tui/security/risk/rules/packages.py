"""Rules for package managers: installing, removing or publishing packages, and the
``run``/``exec`` verbs that run a command in a project's environment."""

from __future__ import annotations

from tui.security.risk.call import Call, Rule
from tui.security.risk.tables.subcommands import PACKAGE_VERBS, RUNNERS


def rule_packages(call: Call) -> None:
    positionals = call.positional_values()
    runner = RUNNERS.get(call.key)
    if runner is not None and positionals[:1] == [runner[0]]:
        start = next(i for i, a in enumerate(call.args) if a.value == runner[0]) + 1
        while start < len(call.args) and (call.args[start].value or "").startswith("-"):
            start += 2 if call.args[start].value in runner[1] else 1
        call.sub_judge(call.args[start:], f"{call.program} {runner[0]} runs")
        call.ro = call.verdict.read_only and call.verdict.risk == "low"
        return
    verbs = PACKAGE_VERBS.get(call.key, frozenset())
    if call.key == "uv" and positionals[:1] == ["pip"]:
        positionals = positionals[1:]
        verbs = PACKAGE_VERBS["pip"]
    hit = next((v for v in positionals[:2] if v in verbs), None)
    if hit is None and call.key in ("yarn", "bundle") and not positionals:
        hit = "install"
    if hit is not None:
        call.flag("medium", f"{call.program} {hit} installs, removes or publishes packages")


def _rule_pacman(call: Call) -> None:
    for option in call.options():
        if option.startswith(("-R", "-U", "--remove", "--upgrade", "--sync")) or (
            option.startswith("-S") and not set(option[2:]) & set("silg")
        ):
            call.flag("medium", "pacman installs or removes packages")
            return


RULES: dict[str, Rule] = {
    # bun is also a JavaScript runtime: ``code`` decides which rule a bun call gets.
    **{name: rule_packages for name in PACKAGE_VERBS if name != "bun"},
    "pacman": _rule_pacman,
}
