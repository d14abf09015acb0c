"""test_binding.py - the ctypes mirror of the public structs matches include/convfind.h.

A Python struct whose fields differ from the header's is not a harmless mismatch: the
library reads an options struct's first struct_size bytes as the header lays them out, so
a field missing here shifts every later one.  So the field names and their order are
read from the header and compared with convfind_ctypes.
"""

import os
import re

import pytest

import convfind_ctypes as cf

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include",
                      "convfind.h")


def header_fields(text, name):
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), text, re.S)
    assert m, f"struct {name} not found in convfind.h"
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = re.sub(r"\[[^]]*\]", "", decl).strip()
        if not decl:
            continue
        fn = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)  # a function pointer
        if fn:
            fields.append(fn.group(1))
            continue
        words = decl.split(",")
        first = re.findall(r"[A-Za-z_]\w*", words[0])[-1]
        fields.append(first)
        fields.extend(w.strip().lstrip("*") for w in words[1:])
    return fields


@pytest.mark.parametrize("name", sorted(cf.MIRRORED))
def test_struct_mirrors_header(name):
    with open(HEADER) as f:
        text = f.read()
    assert [f[0] for f in cf.MIRRORED[name]._fields_] == header_fields(text, name), \
        f"tests/python/convfind_ctypes.py is out of date for {name}"


def test_library_loads_and_lists_the_reference(lib):
    assert "cpu.reference" in lib.algorithms()
