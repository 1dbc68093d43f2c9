#!/usr/bin/env python3
"""Fails when an #include or a CMake link crosses a layer upward (run by ctest as
include_layers).

core/'s layers, lowest first (docs/architecture.md, "Layers"):
  core/common <- core/tracker <- core/engine <- core/sim, core/cuda (backends)
  core/plugin_host (on common, tracker, engine: its adapters turn the C ABI into the
    engine's C++ Policy; the interposer hands the extractor adapter its services)
  core/trace (beside interpose: on common, tracker, engine and plugin_host)
  core/interpose on top (may include any of core but the sim: libpump.so has no sim)
A folder may include its own files and those of the folders it stands on; the
two backends do not include each other. Each folder is one CMake target,
pump_<folder>, and its CMakeLists.txt links (target_link_libraries) only the
targets of folders it may include. core/ includes nothing of bench/,
extractors/, policies/, plugins/ or tests/. The plugins (extractors/, policies/,
plugins/) are built against the SDK alone: nothing of core/, bench/ or tests/.
Outside extractors/ and policies/ (and their tests), nothing includes their
internals: what two trees share belongs below both of them.

usage: check_include_layers.py [SOURCE_DIR]   (default: this script's repository)
"""
import os
import pathlib
import re
import sys

ALLOWED = {
    "common": set(),
    "tracker": {"common"},
    "engine": {"common", "tracker"},
    "sim": {"common", "tracker", "engine"},
    "cuda": {"common", "tracker", "engine"},
    "plugin_host": {"common", "tracker", "engine"},
    "trace": {"common", "tracker", "engine", "plugin_host"},
    "interpose": {"common", "tracker", "engine", "cuda", "plugin_host", "trace"},
}
PLUGIN_TREES = ("extractors", "policies", "plugins")
# Known upward includes still to fix, (file, include): reported, not failed. Each
# entry is a debt: remove it with the fix.
KNOWN = set()
SOURCES = {".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh", ".def"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
LINK = re.compile(r"\btarget_link_libraries\s*\(([^)]*)\)")
CORE_TARGET = re.compile(r"\bpump_([a-z_]+)\b")


def tree_files(root):
    """The tree's files, sorted, never looking inside build directories or .git: a test running
    beside this one (CTest -j) creates and removes files there while it walks."""
    found = []
    for directory, subdirs, files in os.walk(root):
        if pathlib.Path(directory) == root:
            subdirs[:] = [d for d in subdirs if d not in ("build", ".git") and not d.startswith("build-")]
        found.extend(pathlib.Path(directory) / f for f in files)
    return sorted(found)


def violations(root):
    for path in tree_files(root):
        rel = path.relative_to(root)
        if path.suffix not in SOURCES or not path.is_file():
            continue
        top = rel.parts[0]
        lines = path.read_text(errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if (rel.as_posix(), inc) in KNOWN:
                print(f"include layers: known, to fix: {rel}:{number}: #include \"{inc}\"")
                continue
            parts = inc.split("/")
            where = f"{rel}:{number}: #include \"{inc}\""
            if top == "core" and len(rel.parts) > 2:
                layer = rel.parts[1]
                if parts[0] == "core" and len(parts) > 2:
                    target = parts[1]
                    if layer not in ALLOWED:
                        yield f"{where}: core/{layer} has no layer (add it to {pathlib.Path(__file__).name})"
                    elif target != layer and target not in ALLOWED[layer]:
                        yield (f"{where}: core/{layer} may include only core/{{{', '.join(sorted(ALLOWED[layer] | {layer}))}}}"
                               f", not core/{target}")
                elif parts[0] in ("bench", "tests") + PLUGIN_TREES:
                    yield f"{where}: core/ includes nothing of {parts[0]}/"
            elif top in PLUGIN_TREES and parts[0] in ("core", "bench", "tests"):
                yield f"{where}: a plugin is built against the SDK alone, not {parts[0]}/"
            elif parts[0] in PLUGIN_TREES and top != parts[0] and rel.parts[:2] != ("tests", parts[0]):
                yield f"{where}: {parts[0]}/ internals are for {parts[0]}/ and tests/{parts[0]}/ only"


def link_violations(root):
    """Links from core/<folder>/CMakeLists.txt to a pump_<other folder> it may not include."""
    for path in sorted((root / "core").glob("*/**/CMakeLists.txt")):
        layer = path.relative_to(root / "core").parts[0]
        text = re.sub(r"#[^\n]*", "", path.read_text(errors="replace"))  # comments may name anything
        for call in LINK.finditer(text):
            for m in CORE_TARGET.finditer(call.group(1)):
                target = m.group(1)
                if target not in ALLOWED or target == layer:
                    continue  # pump_sdk, pump_copy_kernels, ...: not a core folder
                number = text.count("\n", 0, call.start(1) + m.start()) + 1
                where = f"{path.relative_to(root)}:{number}: links pump_{target}"
                if layer not in ALLOWED:
                    yield f"{where}: core/{layer} has no layer (add it to {pathlib.Path(__file__).name})"
                elif target not in ALLOWED[layer]:
                    may = ", ".join(f"pump_{t}" for t in sorted(ALLOWED[layer]))
                    yield f"{where}: core/{layer} may link only {may or 'no other core target'}, not pump_{target}"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = list(violations(root)) + list(link_violations(root))
    for v in found:
        print(f"include layers: {v}")
    if found:
        print(f"include layers: {len(found)} upward include(s) or link(s); see {pathlib.Path(__file__).name}'s docstring")
        return 1
    print("include layers: no upward include or link")
    return 0


if __name__ == "__main__":
    sys.exit(main())
