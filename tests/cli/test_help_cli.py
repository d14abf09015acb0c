"""test_help_cli.py - what the tool says about itself: `help` for every command (itself
included), the same text from `COMMAND --help`, one meaning per flag across commands,
man pages and bash completion made from the same tables and installed by
`cmake --install`, docs/cli.md naming every command and flag, and the help's environment
variables agreeing with docs/environment.md."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

CLI = os.environ.get("CONVFIND_CLI", "")
BUILD = os.environ.get("CONVFIND_BUILD_DIR", "")
DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "cli.md"
ENV_DOCS = DOCS.with_name("environment.md")
FLAG = re.compile(r"^  (?:-(\S), )?(?:    )?--([a-z_-]+)")


def tool(*args, **kw):
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=60, **kw)


def commands():
    r = tool("help", "--commands")
    assert r.returncode == 0, r.stderr
    names = r.stdout.split()
    assert {"run", "find", "tune", "db", "algos", "demo", "help"} <= set(names)
    return names


def flags_of(name):
    """{long flag: (short letter, its help text)} from `convfind help NAME`."""
    out, flags, current = tool("help", name).stdout, {}, None
    for line in out.splitlines():
        m = FLAG.match(line)
        if m:
            current = m.group(2)
            flags[current] = [m.group(1), line[30:].strip()]
        elif current and line.startswith(" " * 30):
            flags[current][1] += " " + line.strip()
        else:
            current = None
    return flags


def test_help_for_every_command():
    for name in commands():
        r = tool("help", name)
        assert r.returncode == 0 and r.stderr == ""
        assert r.stdout.startswith("usage: convfind %s " % name)
        assert "exit status:" in r.stdout and "-h, --help" in r.stdout
        assert tool(name, "--help").stdout == r.stdout
    assert "convfind help help" in tool("help", "help").stdout
    assert tool("help", "nosuch").returncode == 2


def test_a_flag_means_one_thing_everywhere():
    seen = {}
    for name in commands():
        for flag, (short, text) in flags_of(name).items():
            if flag == "help":
                continue
            assert seen.setdefault(flag, (short, text)) == (short, text), (name, flag)
    assert seen["budget-ms"][1].startswith("Find's time budget per problem in milliseconds")
    assert seen["time"][0] == "t" and "timing switch" in seen["time"][1]
    assert "threads" in seen and seen["threads"][0] is None


def test_man_pages():
    for name in commands():
        page = tool("help", "--man", name).stdout
        assert page.startswith(".TH CONVFIND-%s 1 " % name.upper())
        for section in (".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS",
                        ".SH EXIT STATUS"):
            assert section in page, (name, section)
    top = tool("help", "--man").stdout
    assert top.startswith(".TH CONVFIND 1 ") and ".SH ENVIRONMENT" in top
    if shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-Wbreak", "-z"], input=tool(
            "help", "--man", "tune").stdout, capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", r.stderr


def complete(words):
    """COMPREPLY for the command line `words` (the last one being completed)."""
    script = tool("help", "--bash-completion").stdout
    line = " ".join("'%s'" % w for w in words)
    prog = (script + "\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_convfind\nprintf '%%s\\n' "
            "\"${COMPREPLY[@]}\"\n" % (line, len(words) - 1))
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_bash_completion():
    script = tool("help", "--bash-completion").stdout
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert complete(["convfind", "tu"]) == ["tune"]
    assert complete(["convfind", "tune", "--pol"]) == ["--policy"]
    assert complete(["convfind", "tune", "--policy", ""]) == ["hybrid", "exhaustive"]
    assert "verify" in complete(["convfind", "db", "v"])
    assert "tune" in complete(["convfind", "help", "t"])


def test_docs_name_every_command_and_flag():
    text = DOCS.read_text()
    for name in commands():
        assert "`convfind %s`" % name in text, name
        for flag, (short, _) in flags_of(name).items():
            assert "--" + flag in text, (name, flag)


def documented_variables():
    """{`## ` heading of docs/environment.md: the variables its table's first column names}."""
    sections, current = {}, None
    for line in ENV_DOCS.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), set())
        elif current is not None and line.startswith("| `"):
            current.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return sections


def test_help_environment_matches_docs():
    """The help's list (tools/cli_help.c, also the man page's) names every variable the
    library reads but CONVFIND_FIND_POLICY (every command sets its policy), and only
    variables docs/environment.md gives the library or the tool."""
    out = tool("--help").stdout
    listed = out.split("\nenvironment:\n")[1].split("\nexit status:")[0]
    printed = set(re.findall(r"^  (\S+)", listed, re.M))
    docs = documented_variables()
    library, own = docs["The library (and so the tool)"], docs["The `convfind` tool"]
    assert library and own, "docs/environment.md's headings changed"
    assert library - {"CONVFIND_FIND_POLICY"} - printed == set(), "missing from the help"
    assert printed - library - own == set(), "missing from docs/environment.md"


def test_cmake_install_puts_man_pages_and_completion(tmp_path):
    if not BUILD:
        pytest.fail("CONVFIND_BUILD_DIR must name the build directory")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    share = tmp_path / "share"
    for name in commands():
        assert (share / "man" / "man1" / ("convfind-%s.1" % name)).is_file()
    assert (share / "man" / "man1" / "convfind.1").is_file()
    assert (share / "bash-completion" / "completions" / "convfind").is_file()
