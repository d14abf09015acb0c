"""End-to-end tests of `convfind find` (tools/cmd_find.c): both ways of giving the problem
(MIOpenDriver flags, ONNX flags), a pasted MIOpenDriver line with MIOpenDriver's
meanings, the --json contract, and usage errors."""
import json
import os
import subprocess

import pytest

CLI = os.environ.get("CONVFIND_CLI", "convfind")
FAST = ["--budget-ms", "50", "--threads", "1", "--db", ":memory:"]
STATUSES = {"ok", "failed", "not_applicable"}


def run(*args):
    return subprocess.run([CLI, "find", *args], capture_output=True, text=True, timeout=120)


def find_json(*args):
    r = run(*args, *FAST, "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)  # exactly one JSON document on stdout
    assert set(obj) == {"key", "decision", "candidates"}
    cands = obj["candidates"]
    assert cands and obj["decision"] == cands[0]["algo"]
    assert cands[0]["status"] == "ok" and cands[0]["median_ms"] > 0
    for c in cands:
        assert c["status"] in STATUSES
        assert isinstance(c["validated"], bool)
        assert c["min_ms"] <= c["median_ms"] or c["median_ms"] == 0
        assert c["workspace_bytes"] >= 0
    names = [c["algo"] for c in cands]
    assert len(names) == len(set(names)) and "cpu.reference" in names
    return obj


def test_miopen_2d():
    obj = find_json("-n", "1", "-c", "8", "-H", "9", "-W", "7", "-k", "16", "-y", "3", "-x",
                    "3", "-p", "1", "-q", "1", "-u", "2", "-v", "1")
    assert obj["key"].startswith("v2;conv;f32;nchw;n=1;c=8;in=9x7;m=16;k=3x3;g=1;s=2x1;")
    assert ";out=5x7;" in obj["key"]


def test_miopen_and_onnx_give_one_key():
    a = find_json("-n", "2", "-c", "4", "-H", "6", "-W", "6", "-k", "4", "-y", "3", "-x", "3",
                  "-p", "1", "-q", "1", "-g", "2", "-l", "1", "-j", "1")
    b = find_json("--x-shape", "2,4,6,6", "--w-shape", "4,2,3,3", "--group", "2",
                  "--pads", "1,1,1,1")
    assert a["key"] == b["key"]


def test_miopen_3d_and_transpose():
    obj = find_json("--spatial_dim", "3", "-n", "1", "-c", "2", "--in_d", "4", "-H", "5",
                    "-W", "6", "-k", "3", "--fil_d", "1", "-y", "3", "-x", "3", "-p", "1",
                    "-q", "1", "--pad_d", "0")
    assert ";in=4x5x6;" in obj["key"] and ";k=1x3x3;" in obj["key"]
    obj = find_json("-m", "trans", "-n", "1", "-c", "4", "-H", "5", "-W", "5", "-k", "6",
                    "-y", "3", "-x", "3", "-u", "2", "-v", "2", "--trans_output_pad_h", "1")
    assert obj["key"].startswith("v2;convtranspose;") and ";opad=1,0;" in obj["key"]
    assert ";out=12x11;" in obj["key"]


def test_table():
    r = run("--x-shape", "1,3,8,8", "--w-shape", "4,3,3,3", "--bias", "1", "--activation", "relu",
            *FAST)
    assert r.returncode == 0, r.stderr
    assert "cpu.reference" in r.stdout
    assert r.stdout.strip().splitlines()[-1].startswith("decision ")


@pytest.mark.parametrize("args", [
    [],
    ["-n", "1", "--x-shape", "1,1,4,4", "--w-shape", "1,1,3,3"],
    ["-m", "sideways", "-n", "1"],
    ["--spatial_dim", "4", "-n", "1"],
    ["--x-shape", "1,3,8,8", "--w-shape", "4,3,3,3", "--budget-ms", "-1"],
    ["--x-shape", "1,3,8,8", "--w-shape", "4,3,3,3", "--budget", "1"],
    ["conv", "-n", "1", "-F", "2"],
    ["conv", "-n", "1", "-r", "1"],
    ["conv", "-n", "1", "-f", "NHWC"],
    ["conv", "-n", "1", "-I", "NHWC", "-O", "NCHW"],
    ["convint8", "-n", "1"],
    ["conv", "-n", "1", "frobnicate"],
])
def test_usage_errors(args):
    r = run(*args)
    assert r.returncode == 2
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def test_invalid_problem_names_value():
    r = run("-n", "1", "-c", "3", "-k", "4", "-g", "2", *FAST)
    assert r.returncode == 2 and "-g 2" in r.stderr
    r = run("--x-shape", "1,3,8,8", "--w-shape", "4,2,3,3", *FAST)
    assert r.returncode == 1 and "w_dims[1]" in r.stderr


def test_pasted_miopen_line_means_what_it_meant_to_the_driver():
    """-t is MIOpenDriver's timing switch (not a thread count), -F 1 forward, -V 0 no
    verification, -i iterations; program and command word may be pasted too, and the
    options of convfind may come before or after them."""
    line = ("./bin/MIOpenDriver conv -n 2 -c 4 -H 6 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 "
            "-l 1 -j 1 -g 1 -F 1 -t 1 -V 0 -i 5 -s 0 -w 1 -P 0").split()
    a = find_json(*line)
    b = find_json("--x-shape", "2,4,6,6", "--w-shape", "8,4,3,3", "--pads", "1,1,1,1")
    assert a["key"] == b["key"]
    assert not any(c["validated"] for c in a["candidates"])  # -V 0
    r = run(*FAST, "--json", *line)
    assert r.returncode == 0 and json.loads(r.stdout)["key"] == a["key"], r.stderr


def test_miopen_layout_same_padding_and_bias():
    obj = find_json("conv", "-n", "1", "-c", "4", "-H", "7", "-W", "7", "-k", "4", "-I", "NHWC",
                    "-z", "same", "-u", "2", "-v", "2", "-b", "1")
    key = obj["key"]
    assert key.startswith("v2;conv;f32;nhwc;") and ";out=4x4;" in key and ";bias=1;" in key


def test_fp16_on_the_cpu_names_the_data_type():
    r = run("convfp16", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "4", *FAST)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "data type f16" in r.stderr, r.stderr
    r = run("--x-shape", "1,4,6,6", "--w-shape", "4,4,3,3", "--dtype", "bf16", *FAST)
    assert r.returncode == 1 and "data type bf16" in r.stderr, r.stderr
