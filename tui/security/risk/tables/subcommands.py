"""Subcommand tables: which verbs of systemctl, git, docker, kubectl, gh, tmux and the
package managers only read, which destroy, which install. Plain data, read by the rules.
"""

from __future__ import annotations

from tui.security.risk.tables import names

SYSTEMCTL_HIGH = names(
    "stop disable mask kill poweroff reboot halt kexec isolate suspend hibernate hybrid-sleep "
    "emergency rescue default switch-root soft-reboot exit"
)
SYSTEMCTL_READ = names(
    "status show cat list-units list-unit-files list-timers list-sockets list-dependencies "
    "list-jobs list-machines list-paths is-active is-enabled is-failed is-system-running help "
    "get-default show-environment"
)
NET_VERBS = names("add del delete set flush change replace append prepend restore down up dev-set")
SSH_WITH_ARG = names("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B")

GIT_DANGEROUS_KEYS = names(
    "core.pager core.editor core.sshcommand core.askpass core.fsmonitor core.hookspath "
    "core.gitproxy core.worktree core.alternaterefscommand sequence.editor gpg.program "
    "uploadpack.packobjectshook protocol.allow include.path credential.helper web.browser "
    "interactive.difffilter diff.external sendemail.smtpserver sendemail.tocmd sendemail.cccmd "
    "ssh.variant"
)
GIT_READ = names(
    "status log diff show blame annotate ls-files ls-tree ls-remote rev-parse describe "
    "shortlog cat-file rev-list name-rev merge-base show-ref for-each-ref whatchanged "
    "count-objects version help var check-ignore check-attr check-ref-format show-branch "
    "cherry range-diff diff-tree diff-files diff-index verify-commit verify-tag fsck "
    "get-tar-commit-id request-pull grep archive"
)
GIT_REASONS = {
    "commit": "git commit records a commit (and runs hooks)",
    "push": "git push publishes commits to a remote",
    "pull": "git pull merges remote changes into the work tree",
    "fetch": "git fetch downloads from a remote",
    "clone": "git clone downloads a repository",
    "reset": "git reset moves the branch and may discard work",
    "rebase": "git rebase rewrites history",
    "merge": "git merge changes the branch and work tree",
    "checkout": "git checkout switches branches or overwrites files",
    "switch": "git switch changes the checked-out branch",
    "restore": "git restore discards changes to files",
    "stash": "git stash moves uncommitted changes aside",
    "tag": "git tag creates or deletes tags",
    "branch": "git branch creates, renames or deletes branches",
    "clean": "git clean deletes untracked files",
    "rm": "git rm deletes files",
    "filter-branch": "git filter-branch rewrites history",
    "cherry-pick": "git cherry-pick adds commits",
    "revert": "git revert adds commits",
    "format-patch": "git format-patch writes patch files",
    "config": "git config changes git's configuration",
    "add": "git add stages changes",
    "init": "git init creates a repository",
    "mv": "git mv moves files",
    "apply": "git apply changes files",
    "am": "git am applies patches as commits",
    "gc": "git gc rewrites the object store",
}
GIT_KNOWN = names(
    "add am apply bisect bundle checkout-index commit-tree daemon difftool gc init instaweb "
    "maintenance mergetool mv notes prune read-tree remote repack replace rerere "
    "sparse-checkout submodule symbolic-ref update-index update-ref worktree write-tree "
    "config reflog lfs credential pack-refs fast-import hash-object mktag mktree"
)


# -- containers, clusters, clouds ------------------------------------------------------------

DOCKER_GROUPS = names(
    "container image volume network system compose buildx context plugin builder node "
    "service stack secret config trust manifest swarm"
)
DOCKER_READ = names(
    "ps images logs inspect version info stats top history search port diff events "
    "container:ls container:list container:ps container:inspect container:logs container:top "
    "container:port container:diff container:stats image:ls image:list image:inspect "
    "image:history volume:ls volume:list volume:inspect network:ls network:list "
    "network:inspect compose:ps compose:logs compose:config compose:ls compose:images "
    "compose:top compose:version context:ls context:show context:inspect system:df "
    "system:info system:events buildx:ls buildx:inspect manifest:inspect"
)
DOCKER_GLOBAL_WITH_ARG = names("-H --host --context -c --config -l --log-level")
KUBECTL_READ = names(
    "get describe logs explain version api-resources api-versions cluster-info top events "
    "auth diff wait"
)
GH_READ_VERBS = names("view list status diff checks watch search")
PACKAGE_VERBS: dict[str, frozenset[str]] = {
    "pip": names("install uninstall download wheel"),
    "pipx": names("install uninstall upgrade upgrade-all reinstall reinstall-all inject run"),
    "npm": names(
        "install i in isntall add ci uninstall remove rm r un unlink update up upgrade link ln "
        "publish unpublish exec x dedupe prune init create"
    ),
    "pnpm": names(
        "install i add remove rm uninstall un update up upgrade link publish dlx exec create "
        "import prune"
    ),
    "yarn": names("install add remove upgrade up link publish dlx create global"),
    "bun": names("install i add a remove rm update link publish x create upgrade"),
    "apt": names(
        "install remove purge autoremove upgrade full-upgrade dist-upgrade update reinstall "
        "build-dep clean autoclean"
    ),
    "dnf": names(
        "install remove erase update upgrade downgrade reinstall autoremove groupinstall "
        "groupremove makecache clean swap distro-sync"
    ),
    "apk": names("add del upgrade update fix cache"),
    "brew": names(
        "install uninstall remove rm reinstall upgrade update tap untap link unlink cleanup "
        "services"
    ),
    "zypper": names("install in remove rm update up dist-upgrade dup patch refresh ref"),
    "snap": names("install remove refresh revert disable enable"),
    "flatpak": names("install uninstall update remove"),
    "port": names("install uninstall upgrade selfupdate"),
    "cargo": names("install uninstall add remove publish update fix fmt clean"),
    "go": names("install get generate mod fmt clean"),
    "gem": names("install uninstall update push"),
    "bundle": names("install update add remove"),
    "composer": names("install require update remove"),
    "conda": names("install remove uninstall update upgrade create env clean"),
    "poetry": names("add remove install update lock publish self"),
    "pdm": names("add remove install update sync lock publish"),
    "pipenv": names("install uninstall update sync lock clean"),
    "hatch": names("publish env"),
    "uv": names("add remove sync lock tool venv publish init self python"),
}
RUNNERS: dict[str, tuple[str, frozenset[str]]] = {
    "uv": (
        "run",
        names(
            "--with --with-editable --with-requirements -p --python --directory --project "
            "--package --extra --group --only-group --env-file --index --index-url "
            "--extra-index-url -f --find-links"
        ),
    ),
    "poetry": ("run", frozenset()),
    "pipenv": ("run", frozenset()),
    "pdm": ("run", frozenset()),
    "hatch": ("run", frozenset()),
    "rye": ("run", frozenset()),
    "conda": ("run", names("-n --name -p --prefix")),
    "bundle": ("exec", frozenset()),
}

TMUX_READ = names(
    "ls list-sessions list-windows list-panes list-clients list-keys list-buffers "
    "capture-pane capturep display-message display show-options show show-buffer has-session "
    "has info show-environment"
)
TMUX_WITH_ARG = names("-t -s -n -c -F -x -y -e -l -N -T -d -S -L -f")
TMUX_COMMANDS = names(
    "new-session new new-window neww split-window splitw respawn-pane respawnp "
    "respawn-window respawnw run-shell run pipe-pane pipep if-shell if"
)

JOURNAL_WRITES = tuple(
    names(
        "--vacuum-size --vacuum-time --vacuum-files --rotate --flush --sync --relinquish-var "
        "--smart-relinquish-var --setup-keys --update-catalog"
    )
)
