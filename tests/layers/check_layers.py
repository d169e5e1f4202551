#!/usr/bin/env python3
"""The layers of src/ (src/meson.build): every include of a project header names its folder, and
points to the same folder or one below it. Then the same from the compiler's side: for each layer,
a header of every higher layer is included through that layer's include root (build/src/layers/L),
which must fail, and a header of the layer itself, which must compile.

usage: check_layers.py SOURCE_ROOT LAYER_ROOT CXX [CXXFLAGS...]"""
import os
import re
import subprocess
import sys
import tempfile

ORDER = ["base", "format", "track", "profile", "tier", "runtime"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def scan(src):
    """Every project include in src/, as (file, line, target folder or None for a bare name)."""
    found = []
    for layer in os.listdir(src):
        folder = os.path.join(src, layer)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".h", ".cpp")):
                continue
            text = open(os.path.join(folder, name)).read()
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                head = target.split("/")[0]
                if head == "sentinel" or target == "sentinel_build_config.h":
                    continue  # the public headers (include/) and the build's configuration
                found.append((f"src/{layer}/{name}", line, layer, target, head if "/" in target else None))
    return found


def check_sources(src):
    errors = []
    edges = set()
    for path, line, layer, target, head in scan(src):
        if layer not in ORDER:
            errors.append(f"{path}: folder {layer} is not a layer (src/meson.build)")
            continue
        if head is None:
            errors.append(f'{path}:{line}: #include "{target}" does not name its folder')
        elif head not in ORDER:
            errors.append(f'{path}:{line}: #include "{target}": {head} is not a layer')
        elif ORDER.index(head) > ORDER.index(layer):
            errors.append(f'{path}:{line}: #include "{target}" points up ({layer} -> {head})')
        else:
            edges.add((layer, head))
    return errors, edges


def compiles(cxx, flags, layer_root, layer, header):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(f'#include "{header}"\n')
        probe = f.name
    try:
        r = subprocess.run([cxx, *flags, "-std=c++20", "-fsyntax-only", "-I", os.path.join(layer_root, layer), probe],
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr
    finally:
        os.unlink(probe)


def check_compiler(src, layer_root, cxx, flags):
    errors = []
    for i, layer in enumerate(ORDER):
        own = sorted(n for n in os.listdir(os.path.join(src, layer)) if n.endswith(".h"))
        if own:
            ok, err = compiles(cxx, flags, layer_root, layer, f"{layer}/{own[0]}")
            if not ok:
                errors.append(f"{layer}/{own[0]} does not compile through {layer}'s own include root:\n{err}")
        for higher in ORDER[i + 1:]:
            headers = sorted(n for n in os.listdir(os.path.join(src, higher)) if n.endswith(".h"))
            if not headers:
                continue
            ok, _ = compiles(cxx, flags, layer_root, layer, f"{higher}/{headers[0]}")
            if ok:
                errors.append(f"{higher}/{headers[0]} compiles through {layer}'s include root: a back-edge would too")
    return errors


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    root, layer_root, cxx, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    src = os.path.join(root, "src")
    errors, edges = check_sources(src)
    errors += check_compiler(src, layer_root, cxx, flags)
    for e in errors:
        print("layers:", e)
    down = sorted(f"{a} -> {b}" for a, b in edges if a != b)
    print(f"layers: {len(down)} edges between folders, all downward: " + ", ".join(down))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
