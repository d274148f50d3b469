"""Program tables: the fixed label of each program, which ones only read, which fetch, which
are shells or interpreters, and the environment variables that make programs run code.

Plain data. ``risk.program_names`` expands ``LABELS``; the rules and the dispatch read the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.security.risk.tables import names
from tui.security.risk.verdict import Risk

LABELS: tuple[tuple[Risk, str, str], ...] = (
    ("high", "{} deletes files", "rm unlink srm"),
    ("high", "{} destroys file contents", "shred wipe"),
    ("high", "{} writes raw bytes and can overwrite whole disks", "dd"),
    (
        "high",
        "{} formats or repartitions disks",
        "mkfs mkswap fdisk sfdisk cfdisk gdisk sgdisk parted wipefs blkdiscard hdparm cryptsetup",
    ),
    ("high", "{} runs commands as another user", "su runuser"),
    ("high", "{} edits files as root", "sudoedit"),
    ("high", "{} changes file permissions or ownership", "chmod chown chgrp chattr setfacl"),
    ("high", "{} mounts or unmounts file systems", "mount umount losetup swapon swapoff"),
    ("high", "{} changes the firewall", "iptables nft ufw firewall-cmd pfctl"),
    ("high", "{} runs commands on or copies files to another machine", "ssh scp sftp"),
    ("high", "{} copies credentials to another machine", "ssh-copy-id"),
    ("high", "{} stops or restarts the machine", "shutdown reboot halt poweroff init telinit"),
    ("high", "{} replaces the running kernel", "kexec"),
    ("high", "{} kills every process with a matching name", "killall pkill"),
    ("high", "{} cuts files short, destroying their contents", "truncate"),
    (
        "high",
        "{} changes user accounts or passwords",
        "useradd userdel usermod groupadd groupdel groupmod passwd chpasswd visudo adduser deluser",
    ),
    ("high", "{} loads or unloads kernel modules", "insmod rmmod modprobe"),
    ("medium", "{} removes directories", "rmdir"),
    ("medium", "{} copies files and may overwrite them", "cp"),
    ("medium", "{} moves or renames files and may overwrite them", "mv"),
    ("medium", "{} creates directories", "mkdir"),
    ("medium", "{} creates files or changes their timestamps", "touch"),
    ("medium", "{} creates links and may replace files", "ln"),
    ("medium", "{} installs files", "install"),
    ("medium", "{} renames files", "rename"),
    ("medium", "{} changes files", "patch"),
    ("medium", "{} runs build recipes, which can run any command", "make gmake ninja"),
    ("medium", "{} opens files or URLs in other programs", "open xdg-open"),
    ("medium", "{} schedules commands to run later", "at batch"),
    ("medium", "{} writes keys", "ssh-keygen ssh-add"),
    ("medium", "{} downloads and runs a package", "npx"),
    ("medium", "{} changes system settings", "defaults launchctl"),
    ("medium", "{} copies files and may overwrite them", "rsync"),
    ("medium", "{} writes files", "split csplit"),
    ("medium", "{} publishes packages", "twine"),
)
"""(label, reason with ``{}`` for the name, the programs it applies to), for programs whose
label does not depend on their arguments."""

_READ_ONLY_BUILTINS_AND_TOOLS = names("""
    ls ll la dir vdir cat tac pwd echo printf grep rg ag ack head tail wc find stat file which
    whereis type date env printenv id whoami groups uname uptime ps df du free tree cut tr diff
    cmp comm basename dirname realpath readlink true false : test [ seq sleep nl od xxd hexdump
    strings md5sum cksum b2sum shasum base64 base32 column jq rev fold fmt paste join expand
    unexpand look locate whatis man apropos help pgrep lsof netstat ss lscpu lsblk lsusb lspci
    lsmod nproc arch tty locale cal ncal vmstat iostat dmesg cd pushd popd dirs wait read exit
    return shift set shopt umask ulimit hash history times caller getopts jobs fc sort uniq less
    more bat zcat zgrep bzcat xzcat zless lz4cat tput stty clear logname users who w last host
    dig nslookup ping traceroute tracepath whois getent sum nm objdump readelf ldd size sw_vers
    alias unalias hostname command builtin exec time nice nohup timeout stdbuf setsid xargs
    unbuffer noglob nocorrect busybox toybox coproc yes bc dc expr factor numfmt
    """)

FETCHERS = names(
    "curl wget fetch aria2c http https xh httpie lwp-request get nc socat telnet ftp tftp "
    "lynx links w3m ssh"
)
SHELLS = names("sh bash zsh dash ksh mksh ash fish csh tcsh yash rbash pdksh oksh loksh posh")
CODE_LOADING_VARS = names(
    "LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH BASH_ENV ENV "
    "PROMPT_COMMAND SHELLOPTS BASHOPTS PS4 NODE_OPTIONS PYTHONSTARTUP PYTHONPATH PERL5OPT "
    "PERL5LIB RUBYOPT RUBYLIB JAVA_TOOL_OPTIONS IFS GIT_EXEC_PATH GIT_TEMPLATE_DIR "
    "PS0 PS1 PS2 PS3 PROMPT RPROMPT RPS1 SPROMPT ZDOTDIR FPATH PRECMD_FUNCTIONS "
    "PREEXEC_FUNCTIONS CHPWD_FUNCTIONS PERIODIC_FUNCTIONS ZSHADDHISTORY_FUNCTIONS "
    "GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_CONFIG_PARAMETERS"
)
COMMAND_VARS = names(
    "PAGER GIT_PAGER MANPAGER EDITOR VISUAL GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH "
    "GIT_SSH_COMMAND GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND "
    "LESSOPEN LESSCLOSE BROWSER SYSTEMD_PAGER"
)
PATH_VARS = names("PATH MANPATH CDPATH")

VERSIONED = re.compile(
    r"^(python|pypy|pip|perl|ruby|php|lua|node|pydoc|bash|gawk|go|gem|irb)[0-9][0-9.\-]*$"
)
ALIASES = {
    "pypy": "python",
    "pypy3": "python",
    "python-dbg": "python",
    "pip3": "pip",
    "nodejs": "node",
    "gawk": "awk",
    "mawk": "awk",
    "nawk": "awk",
    "busybox-awk": "awk",
    "apt-get": "apt",
    "aptitude": "apt",
    "microdnf": "dnf",
    "yum": "dnf",
    "mamba": "conda",
    "micromamba": "conda",
    "egrep": "grep",
    "fgrep": "grep",
    "podman": "docker",
    "nerdctl": "docker",
    "ncat": "nc",
    "netcat": "nc",
    "perl5": "perl",
    "mke2fs": "mkfs",
    "ip6tables": "iptables",
    "iptables-restore": "iptables",
    "ip6tables-restore": "iptables",
    "iptables-legacy": "iptables",
    "iptables-nft": "iptables",
    "pnpx": "npx",
    "bunx": "npx",
    "uvx": "npx",
    "pwsh": "powershell",
    "sha256sum": "md5sum",
    "sha1sum": "md5sum",
    "sha512sum": "md5sum",
}


COMPRESSORS = names("gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 compress uncompress")
"""Programs that replace files with (de)compressed copies unless told to print or test."""
ARCHIVERS = names("zip 7z 7za rar unrar")
"""Archive programs other than tar and unzip: only ``l``/``t`` only read."""

INFO_FLAGS = names("--version --help -V -h -version -help")


@dataclass(frozen=True)
class Lang:
    """How an interpreter takes inline code: the options that carry it."""

    name: str
    code_options: frozenset[str]
    cluster: str = ""
    """Letters that mean inline code inside a short-option cluster (perl -pe, python -Sc)."""
    with_arg: frozenset[str] = frozenset()


def lang(name: str, code: str, cluster: str = "", with_arg: str = "") -> Lang:
    """A ``Lang`` written compactly: option lists as one string each."""
    return Lang(name, frozenset(code.split()), cluster, frozenset(with_arg.split()))


LANGS: dict[str, Lang] = {
    "python": lang("Python", "-c", "c", "-W -X -Q"),
    "node": lang(
        "JavaScript",
        "-e --eval -p --print",
        with_arg="-r --require --import --loader --experimental-loader -C --conditions",
    ),
    "bun": lang("JavaScript", "-e --eval -p --print"),
    "ts-node": lang("TypeScript", "-e --eval -p --print"),
    "tsx": lang("TypeScript", "-e --eval -p --print"),
    "perl": lang("Perl", "-e -E", "eE", "-I -M -m"),
    "ruby": lang("Ruby", "-e", "e", "-I -r -C -E"),
    "irb": lang("Ruby", ""),
    "php": lang("PHP", "-r -B -R -E -F", "", "-c -d -z"),
    "lua": lang("Lua", "-e", "", "-l"),
    "luajit": lang("Lua", "-e", "", "-l -j"),
    "rscript": lang("R", "-e --expr"),
    "julia": lang("Julia", "-e --eval -E --print"),
    "osascript": lang("AppleScript", "-e"),
    "powershell": lang("PowerShell", "-c -command -encodedcommand -ec -e"),
    "tclsh": lang("Tcl", ""),
    "wish": lang("Tcl", ""),
    "guile": lang("Scheme", "-c -e"),
    "racket": lang("Racket", "-e --eval"),
    "scala": lang("Scala", "-e"),
    "groovy": lang("Groovy", "-e"),
    "elixir": lang("Elixir", "-e --eval"),
    "erl": lang("Erlang", "-eval"),
}


# Programs that run the project's own code, and editors (which write and run commands).
TOOLCHAIN = names(
    "pytest py.test tox nox mvn gradle gradlew javac java gcc g++ cc c++ clang clang++ rustc "
    "tsc cmake meson ctest jest vitest mocha eslint prettier black ruff mypy pyright flake8 "
    "isort pylint rustfmt gofmt pre-commit"
)
EDITORS = names("vim vi nvim view vimdiff ex nano pico emacs micro ed code subl mcedit joe")
ALSO_KNOWN = (
    EDITORS
    | names(
        "journalctl mapfile readarray enable complete compgen bind setopt unsetopt declare "
        "typeset export local readonly ps top htop rg ag ack ugrep man bat less more most xxd "
        "tree history printf read hash umask set shopt base64 base32 grep script"
    )
    | TOOLCHAIN
)
"""Names a rule judges by flag alone (no table entry of their own): known, not unknown."""
READ_ONLY = _READ_ONLY_BUILTINS_AND_TOOLS | names(
    "journalctl mapfile readarray enable complete compgen bind top htop fd fdfind eza exa "
    "pstree lsb_release break continue fg bg disown compopt let"
)
"""Programs that only read, unless a rule finds a flag that writes or runs something."""


SENSITIVE_VARS = names(
    "PS0 PS1 PS2 PS3 PS4 PROMPT PROMPT2 PROMPT3 PROMPT4 RPROMPT RPS1 RPS2 SPROMPT "
    "PROMPT_COMMAND BASH_ENV ENV ZDOTDIR FPATH PATH IFS HISTFILE PRECMD_FUNCTIONS "
    "PREEXEC_FUNCTIONS CHPWD_FUNCTIONS PERIODIC_FUNCTIONS ZSHADDHISTORY_FUNCTIONS "
    "ZSHEXIT_FUNCTIONS CDPATH MANPATH"
)
"""Shell variables whose value later commands run, load or are found through."""
