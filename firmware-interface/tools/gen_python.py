#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Generate ohca_fwif.py, the firmware interface for Python tools.

The headers in firmware-interface/include/ohca are the only definition of
register offsets, opcodes, statuses and entry layouts. Python tools (the
qtest smoke test, the guest's ohca-cmdtest, test harnesses) import this
generated module instead of restating numbers. The C compiler evaluates
every value, so expressions, enums with implicit values and sizeof/offsetof
come out exactly as the kernel, provider and device see them.

Usage: gen_python.py OUTPUT.py [CC]
"""

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(os.path.dirname(HERE), "include")
HEADERS = ["ohca_types.h", "ohca_regs.h", "ohca_cmd.h", "ohca_queue.h"]

DEFINE = re.compile(r"^#define\s+(OHCA_[A-Z0-9_]+)[ \t]+(\S.*)$")
ENUMERATOR = re.compile(r"^\s*(OHCA_[A-Z0-9_]+)\s*(?:=[^,]*)?,?\s*(?:/\*.*)?$")
ENUM_OPEN = re.compile(r"^enum\s+\w*\s*\{")
STRUCT_OPEN = re.compile(r"^struct\s+(ohca_\w+)\s*\{")
FIELD = re.compile(r"^\t[\w ]+?\s\**(\w+)(?:\[[^\]]*\])?;")


def scan(text):
    """Names of object-like macros and enumerators; structs with their
    top-level fields (members of nested unions/structs are skipped)."""
    consts, structs = [], {}
    in_enum, struct, depth = False, None, 0
    for line in text.splitlines():
        m = DEFINE.match(line)
        if m and not m.group(2).startswith("OHCA_STATIC_ASSERT"):
            consts.append(m.group(1))
            continue
        if ENUM_OPEN.match(line):
            in_enum = True
            continue
        if in_enum:
            if line.startswith("}"):
                in_enum = False
            elif (m := ENUMERATOR.match(line)):
                consts.append(m.group(1))
            continue
        if struct is None:
            if (m := STRUCT_OPEN.match(line)):
                struct, depth = m.group(1), 1
                structs[struct] = []
            continue
        depth += line.count("{") - line.count("}")
        if depth == 0:
            struct = None
        elif depth == 1 and (m := FIELD.match(line)):
            structs[struct].append(m.group(1))
    return consts, structs


def main():
    out = sys.argv[1]
    cc = sys.argv[2] if len(sys.argv) > 2 else "cc"
    consts, structs = [], {}
    for h in HEADERS:
        with open(os.path.join(INCLUDE, "ohca", h)) as f:
            c, s = scan(f.read())
        consts += c
        structs.update(s)

    src = ["#include <stdio.h>", "#include <stddef.h>"]
    src += [f'#include "ohca/{h}"' for h in HEADERS]
    src.append("int main(void)\n{")
    for name in consts:
        src.append(f'\tprintf("{name} = %#llx\\n", (unsigned long long)({name}));')
    src.append('\tprintf("SIZEOF = {\\n");')
    for s in structs:
        src.append(f'\tprintf("    \\"{s}\\": %zu,\\n", sizeof(struct {s}));')
    src.append('\tprintf("}\\nOFFSETOF = {\\n");')
    for s, fields in structs.items():
        src.append(f'\tprintf("    \\"{s}\\": {{\\n");')
        for fld in fields:
            src.append(f'\tprintf("        \\"{fld}\\": %zu,\\n", offsetof(struct {s}, {fld}));')
        src.append('\tprintf("    },\\n");')
    src.append('\tprintf("}\\n");\n\treturn 0;\n}')

    with tempfile.TemporaryDirectory() as tmp:
        c_path, exe = os.path.join(tmp, "gen.c"), os.path.join(tmp, "gen")
        with open(c_path, "w") as f:
            f.write("\n".join(src) + "\n")
        subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", INCLUDE, c_path, "-o", exe],
                       check=True)
        body = subprocess.run([exe], check=True, capture_output=True, text=True).stdout

    tmp_out = out + ".tmp"
    with open(tmp_out, "w") as f:
        f.write('"""ohca firmware interface, generated from firmware-interface/include/ohca\n'
                'by firmware-interface/tools/gen_python.py. Do not edit."""\n\n')
        f.write(body)
    os.replace(tmp_out, out)
    print(f"gen_python: {len(consts)} constants, {len(structs)} structs -> {out}")


if __name__ == "__main__":
    main()
