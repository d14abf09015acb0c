"""test_defects.py - one row per defect of issue 16 that the CLI or the find database had.

Each row reproduces what the issue reports and checks the fixed behaviour; every row
failed before its fix.  Rows that need another user (root to switch to `nobody`) or a
non-sanitized build (address-space limits cannot coexist with AddressSanitizer's
shadow memory) skip with the reason.  Every command also has to keep the one-line error
rule: a failing command prints exactly one line on stderr.

The table is ROWS at the end: (defect number, what it checks, function).
"""
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest

CLI = os.environ.get("CONVFIND_CLI", "")
SANITIZED = os.environ.get("CONVFIND_SANITIZED", "") == "1"
CSV_HEADER = "name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group\n"
TINY = CSV_HEADER + "a,1,1,4,6,6,4,3,3,1,1,1,1,1,1,1\n"
TWO = CSV_HEADER + "b,1,1,2,5,5,2,1,1,0,0,1,1,1,1,1\nc,1,1,3,5,5,3,3,3,0,0,1,1,1,1,1\n"
SCHEMA = """CREATE TABLE decisions(key TEXT NOT NULL, library_version TEXT NOT NULL,
 backend_versions TEXT NOT NULL, device TEXT NOT NULL, algo TEXT NOT NULL,
 decision TEXT NOT NULL, bad_candidates TEXT NOT NULL, host TEXT NOT NULL,
 created_at INTEGER NOT NULL, PRIMARY KEY (key, library_version, backend_versions, device));
CREATE TABLE leases(key TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL,
 expires_ms INTEGER NOT NULL);"""


def cli(*args, timeout=120, **kw):
    if not CLI or not os.access(CLI, os.X_OK):
        pytest.fail("CONVFIND_CLI must name the built convfind executable, got %r" % CLI)
    env = dict(os.environ, CONVFIND_DB_PATH=":memory:")
    env.pop("CONVFIND_SYSTEM_DB", None)
    env.update(kw.pop("env", {}))
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=timeout, **kw)


def one_line(r):
    lines = r.stderr.strip().split("\n")
    assert len(lines) == 1, r.stderr
    return lines[0]


def snapshot(directory):
    """Names, sizes and contents of every file below `directory`."""
    out = {}
    for root, _, files in os.walk(directory):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, directory)] = fh.read()
    return out


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))


def make_corrupt_db(path):
    """A file with convfind's header and schema whose data pages are damaged, so that
    SQLite's integrity check answers with several lines."""
    c = sqlite3.connect(path)
    c.executescript(SCHEMA)
    c.execute("PRAGMA user_version=1")
    c.execute("PRAGMA application_id=%d" % 0x43464442)
    for i in range(400):
        c.execute("INSERT INTO decisions VALUES(?,?,?,?,?,?,?,?,?)",
                  ("v1;k%05d" % i, "0", "cpu", "dev", "a", "{}" + " " * 200, "", "h", 0))
    c.commit()
    c.close()
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size - 6 * 4096 + 100)
        f.write(bytes((i * 7919) % 251 for i in range(3000)))


def tuned_db(tmp_path, name="t.sqlite", csv=TINY):
    db = tmp_path / name
    (tmp_path / (name + ".csv")).write_text(csv)
    r = cli("tune", "--budget-ms", "20", "--db", db, tmp_path / (name + ".csv"))
    assert r.returncode == 0, r.stderr
    return db


def exported_line(tmp_path):
    db = tuned_db(tmp_path, "export.sqlite")
    out = tmp_path / "export.jsonl"
    assert cli("db", "export", out, "--db", db).returncode == 0
    return out.read_text().splitlines()[0]


def records(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return c.execute("SELECT count(*) FROM decisions").fetchone()[0]
    finally:
        c.close()


# ---- defect 2: `run -o PATH` removed PATH when the write failed ------------------------

def row_run_output_write_fails(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((1, 3, 42, 42), np.float32))
    np.save(tmp_path / "w.npy", np.ones((3, 3, 3, 3), np.float32))
    out = tmp_path / "y.npy"
    out.write_bytes(b"precious" * 16)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    before = sorted(os.listdir(tmp_path))
    r = cli("run", "--input", tmp_path / "x.npy", "--weights", tmp_path / "w.npy",
            "--output", out, preexec_fn=small_files)
    assert r.returncode == 1
    assert "output" in one_line(r)
    assert out.read_bytes() == b"precious" * 16
    assert sorted(os.listdir(tmp_path)) == before  # no temporary file left behind


# ---- defect 3: `db verify` reported ok on a corrupt database ---------------------------

def row_verify_corrupt(tmp_path):
    db = tmp_path / "corrupt.sqlite"
    make_corrupt_db(db)
    before = snapshot(tmp_path)
    r = cli("db", "verify", "--db", db)
    assert r.returncode == 1
    assert str(db) in one_line(r)
    assert snapshot(tmp_path) == before


# ---- defect 4: read-only commands modified files ---------------------------------------

def row_inspect_creates_nothing(tmp_path):
    db = tmp_path / "sub" / "dir" / "x.sqlite"
    for sub in (["path"], ["list"], ["show", "v1;none"], ["stats"], ["verify"]):
        cli("db", *sub, "--db", db)
        assert not (tmp_path / "sub").exists(), sub


def row_inspect_other_user(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to run the command as user nobody")
    shared = tempfile.mkdtemp(prefix="convfind-defect4-")
    try:
        os.chmod(shared, 0o777)
        db = tuned_db(tmp_path)
        team = os.path.join(shared, "team.sqlite")
        shutil.copy(db, team)
        os.chmod(team, 0o644)
        before = snapshot(shared)

        def as_nobody():
            os.setgid(65534)
            os.setuid(65534)

        for sub in (["list"], ["stats"], ["verify"], ["path"]):
            r = cli("db", *sub, "--db", team, preexec_fn=as_nobody)
            assert r.returncode == 0, (sub, r.stderr)
            assert snapshot(shared) == before, sub
    finally:
        shutil.rmtree(shared)


def row_newer_schema(tmp_path):
    db = tuned_db(tmp_path)
    c = sqlite3.connect(db)
    c.execute("PRAGMA user_version=99")
    c.close()
    ino = os.stat(db).st_ino
    r = cli("db", "list", "--db", db)
    assert len(r.stderr.strip().split("\n")) <= 1, r.stderr
    (tmp_path / "two.csv").write_text(TWO)
    cli("tune", "--budget-ms", "20", "--db", db, tmp_path / "two.csv")
    assert os.stat(db).st_ino == ino
    assert not [f for f in os.listdir(tmp_path) if "quarantine" in f]


# ---- defect 5: `db import` was not all-or-nothing under memory pressure ------------------

def row_import_memory_pressure(tmp_path):
    if SANITIZED:
        pytest.skip("an address-space limit cannot be combined with AddressSanitizer")
    good = exported_line(tmp_path)
    db = tmp_path / "pi.sqlite"
    proc = subprocess.Popen([CLI, "db", "import", "-", "--db", str(db)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=limit_address_space)

    def feed():
        try:
            proc.stdin.write((good + "\n").encode())
            zeros = bytes(1 << 20)
            for _ in range(600):
                proc.stdin.write(zeros)
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    # Not communicate(): it would close stdin before the writer is done.
    writer = threading.Thread(target=feed)
    writer.start()
    err = proc.stderr.read()
    out = proc.stdout.read()
    proc.wait(timeout=120)
    writer.join()
    assert proc.returncode == 1, (out, err)
    assert len(err.decode().strip().split("\n")) == 1, err
    assert not db.exists() or records(db) == 0


def row_import_dev_zero(tmp_path):
    db = tmp_path / "z.sqlite"
    r = cli("db", "import", "/dev/zero", "--db", db, timeout=60,
            preexec_fn=None if SANITIZED else limit_address_space)
    assert r.returncode == 1
    one_line(r)


# ---- defect 6: nothing stored, exit 0 ----------------------------------------------------

def row_db_directory(tmp_path):
    (tmp_path / "l.csv").write_text(TINY)
    r = cli("tune", "--budget-ms", "20", "--db", tmp_path, tmp_path / "l.csv")
    assert r.returncode != 0
    assert ":memory:" not in r.stdout
    one_line(r)


def row_db_fifo(tmp_path):
    good = exported_line(tmp_path)
    (tmp_path / "good.jsonl").write_text(good + "\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = cli("db", "import", tmp_path / "good.jsonl", "--db", fifo, timeout=60)
    assert r.returncode == 1
    assert "imported" not in r.stdout
    one_line(r)


def row_db_empty(tmp_path):
    (tmp_path / "l.csv").write_text(TINY)
    r = cli("tune", "--budget-ms", "20", "--db", "", tmp_path / "l.csv")
    assert r.returncode != 0
    one_line(r)


def hold_write_lock(db, seconds):
    """A process that holds the database's write lock for `seconds`."""
    code = ("import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\n"
            "print('locked', flush=True)\n"
            "time.sleep(float(sys.argv[2]))\n"
            "c.execute('COMMIT')\n")
    p = subprocess.Popen(["python3", "-c", code, str(db), str(seconds)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def tune_while_locked(tmp_path, seconds):
    """Tunes two new problems into a database another process holds the write lock of
    for `seconds` (a busy timeout is 5 s); returns the result and the database."""
    db = tuned_db(tmp_path)
    (tmp_path / "two.csv").write_text(TWO)
    holder = hold_write_lock(db, seconds)
    try:
        return cli("tune", "--budget-ms", "20", "--db", db, tmp_path / "two.csv"), db
    finally:
        holder.kill()
        holder.wait()


def row_locked_then_released(tmp_path):
    r, db = tune_while_locked(tmp_path, 7)
    assert r.returncode == 0, r.stderr
    assert records(db) == 3


def row_locked_forever(tmp_path):
    r, _ = tune_while_locked(tmp_path, 60)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "could not be stored" in r.stderr, r.stderr


# ---- defect 7: a FIFO system database hung; a corrupt one was silent ----------------------

def row_system_fifo(tmp_path):
    fifo = tmp_path / "sys.fifo"
    os.mkfifo(fifo)
    r = cli("db", "stats", "--db", tmp_path / "u.sqlite", "--system-db", fifo, timeout=60)
    assert r.returncode == 0, r.stderr
    assert str(fifo) in one_line(r)


def row_system_corrupt(tmp_path):
    sysdb = tmp_path / "sys.sqlite"
    make_corrupt_db(sysdb)
    r = cli("db", "stats", "--db", tmp_path / "u.sqlite", "--system-db", sysdb)
    assert r.returncode == 0, r.stderr
    assert str(sysdb) in one_line(r)


# ---- defect 10: the smaller ones ---------------------------------------------------------

def row_long_miopen_line(tmp_path):
    long_line = "MIOpenDriver conv -n 1 -c 4 -H 6 -W 6 -k 4" + " " * 3000 + "-y 1 -x 1 -F 1\n"
    (tmp_path / "m.txt").write_text(long_line + "MIOpenDriver conv -n 1 -Q 3\n")
    r = cli("tune", "--budget-ms", "20", "--db", tmp_path / "m.sqlite", tmp_path / "m.txt")
    assert r.returncode != 0
    line = one_line(r)
    assert ":2:" in line and "-Q" in line, line


def row_nul_file(tmp_path):
    (tmp_path / "nul.txt").write_bytes(bytes(1000))
    r = cli("tune", "--db", tmp_path / "n.sqlite", tmp_path / "nul.txt")
    assert r.returncode != 0
    one_line(r)


def row_tune_dev_zero(tmp_path):
    r = cli("tune", "--db", tmp_path / "n.sqlite", "/dev/zero", timeout=60)
    assert r.returncode != 0
    one_line(r)


def row_npy_nul_dtype(tmp_path):
    import io
    buf = io.BytesIO()
    np.save(buf, np.ones((1, 2, 5, 5), np.float32))
    data = buf.getvalue()
    end = data.index(b"\n")
    assert data[end - 1:end] == b" "
    data = (data[:end - 1] + data[end:]).replace(b"'<f4'", b"'<f4\x00'")
    (tmp_path / "x.npy").write_bytes(data)
    np.save(tmp_path / "w.npy", np.ones((3, 2, 3, 3), np.float32))
    r = cli("run", "--input", tmp_path / "x.npy", "--weights", tmp_path / "w.npy",
            "--output", tmp_path / "y.npy")
    assert r.returncode != 0
    one_line(r)
    assert not (tmp_path / "y.npy").exists()


def row_tuned_count(tmp_path):
    # The second row's 3x3 kernel is larger than its 2x2 unpadded input: the reader
    # passes it on, and the library rejects it (an empty output).
    (tmp_path / "l.csv").write_text(CSV_HEADER + "ok,1,1,4,6,6,4,1,1,0,0,1,1,1,1,1\n"
                                    "bad,1,1,4,2,2,4,3,3,0,0,1,1,1,1,1\n")
    r = cli("tune", "--budget-ms", "20", "--db", tmp_path / "c.sqlite", tmp_path / "l.csv")
    assert r.returncode == 1
    m = re.search(r"^tuned=(\d+) ", r.stdout, re.M)
    assert m and int(m.group(1)) == 1, r.stdout


def row_retime_key(tmp_path):
    record = json.loads(exported_line(tmp_path))
    key = record["key"]
    assert len(key) > 120
    record["env"]["library"] = "0.0.0-elsewhere"
    (tmp_path / "foreign.jsonl").write_text(json.dumps(record) + "\n")
    db = tmp_path / "f.sqlite"
    assert cli("db", "import", tmp_path / "foreign.jsonl", "--db", db).returncode == 0
    (tmp_path / "l.csv").write_text(TINY.replace("a,1,", "again,1,"))
    r = cli("tune", "--budget-ms", "20", "--db", db, tmp_path / "l.csv")
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "another environment" in line]
    assert len(warning) == 1 and key in warning[0], r.stderr


ROWS = [
    (2, "run's output: a failed write keeps the existing file", row_run_output_write_fails),
    (3, "db verify: a corrupt file is reported and left as it was", row_verify_corrupt),
    (4, "inspection commands create no directory and no file", row_inspect_creates_nothing),
    (4, "inspection by another user changes nothing", row_inspect_other_user),
    (4, "a newer schema's file is never moved aside", row_newer_schema),
    (5, "db import under memory pressure: all or nothing", row_import_memory_pressure),
    (5, "db import /dev/zero: bounded, fails", row_import_dev_zero),
    (6, "--db naming a directory: an error, not memory", row_db_directory),
    (6, "--db naming a FIFO: an error, not memory", row_db_fifo),
    (6, "--db '': an error, not an anonymous database", row_db_empty),
    (6, "a database locked for a while: waited for, stored", row_locked_then_released),
    (6, "decisions that could not be stored: tune fails", row_locked_forever),
    (7, "a FIFO system database: one warning, no hang", row_system_fifo),
    (7, "a corrupt system database: one warning", row_system_corrupt),
    (10, "MIOpenDriver lines longer than 2047 characters", row_long_miopen_line),
    (10, "a file of NUL bytes is not an empty problem list", row_nul_file),
    (10, "tune /dev/zero stops with an error", row_tune_dev_zero),
    (10, ".npy dtype '<f4\\0' is rejected", row_npy_nul_dtype),
    (10, "tuned= counts only the problems that were tuned", row_tuned_count),
    (10, "the re-time warning names the whole key, on one line", row_retime_key),
]


@pytest.mark.parametrize("defect,what,row", ROWS,
                         ids=["%d-%s" % (d, f.__name__[4:]) for d, _, f in ROWS])
def test_defect(defect, what, row, tmp_path):
    row(tmp_path)
