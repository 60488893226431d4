#!/usr/bin/env python3
"""Checks that every target of Package.swift declares the targets of ours it imports, and that
no import points the wrong way (FORBIDDEN below, each with its reason).

An import of one of our modules that the target does not declare still compiles (the module is
built for another target), but SwiftPM's incremental build then misses the dependency: a change
to the imported module's types leaves the importer's objects stale, and the binary crashes on a
layout that no longer exists (it happened: PushcampRehearsal and a PlanFunnel that gained a field).

    scripts/check-imports.py      # exit 1, naming each target and module, when one is undeclared
"""
import glob
import os
import re
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
manifest = open("Package.swift", encoding="utf-8").read()
ours = set(os.listdir("Sources")) | set(os.listdir("Tests"))

declared = {}
starts = [m for m in re.finditer(r'\.(?:target|executableTarget|testTarget|systemLibrary)\(\s*name:\s*"([^"]+)"', manifest)]
for position, match in enumerate(starts):
    end = starts[position + 1].start() if position + 1 < len(starts) else len(manifest)
    body = manifest[match.end():end]
    listed = re.search(r"dependencies:\s*\[", body)
    dependencies = set()
    if listed:
        # The list's own brackets: products and conditions nest inside it.
        depth, index = 0, listed.end() - 1
        while True:
            depth += {"[": 1, "]": -1}.get(body[index], 0)
            if depth == 0:
                break
            index += 1
        dependencies = set(re.findall(r'"([A-Za-z0-9_]+)"', body[listed.end():index]))
    declared[match.group(1)] = dependencies

# Arrows that would point the wrong way: (importer, imported) -> why not. An importer is a target,
# or one of the `pushcamp` command's files.
FORBIDDEN = {
    ("PushcampSend", "PushcampAudience"): "recipients reach a send through the planner",
    ("PushcampSend", "PushcampServe"): "serve is built on sends, not the other way",
    ("PushcampJournal", "PushcampSend"): "the journal is below the sends that record in it",
    ("PushcampPlanner", "PushcampSend"): "planning comes before sending",
    ("pushcamp", "PushcampPostgres"): "commands reach every journal through PushcampJournalAccess",
    ("pushcamp/Report.swift", "PushcampServe"): "a report is read from the journal, not from serve",
}

problems = []
for name, dependencies in sorted(declared.items()):
    folder = os.path.join("Sources", name) if os.path.isdir(os.path.join("Sources", name)) else os.path.join("Tests", name)
    imported = set()
    for path in glob.glob(os.path.join(folder, "**", "*.swift"), recursive=True):
        for line in open(path, encoding="utf-8"):
            found = re.match(r"\s*(?:@testable\s+|@_spi\(\w+\)\s+)?import\s+(\w+)", line)
            if found:
                imported.add(found.group(1))
                file = name + "/" + os.path.relpath(path, folder)
                for importer in (name, file):
                    why = FORBIDDEN.get((importer, found.group(1)))
                    if why:
                        problems.append(f"{path}: imports {found.group(1)}, which points the wrong way: {why}")
    for module in sorted(imported & ours - dependencies - {name}):
        problems.append(f"Package.swift: target {name} imports {module} without declaring it in its dependencies")

for problem in problems:
    print(problem, file=sys.stderr)
if problems:
    sys.exit(1)
print(
    f"imports: every one of {len(declared)} targets declares the modules of ours it imports, "
    f"and none of {len(FORBIDDEN)} wrong-way arrows is taken"
)
