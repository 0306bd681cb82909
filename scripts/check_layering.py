#!/usr/bin/env python3
"""Prints the folder-level include graph of src/ and include/dlsched/; fails on a cycle.

Usage: check_layering.py [SOURCE_DIR]   (default: the parent of this script's folder)

A node is a top-level folder of src/ (src/daemon counts as one node: its api, core, exec and
store subfolders include each other, issue 17 item 2) or a folder of include/dlsched/. An edge
A -> B means a file under A has `#include "B/..."` (or `"dlsched/B/..."` for include/dlsched/B).
Includes of test/ helpers ("support/...") and of third-party headers are not nodes. Exit status
0 when the graph has no cycle, 1 with the cycle printed when it has one.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def node_of_file(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "src":
        return rel[1]
    return "dlsched/" + rel[2]  # include/dlsched/<folder>/...


def node_of_include(spelling, src_folders, public_folders):
    parts = spelling.split("/")
    if len(parts) >= 3 and parts[0] == "dlsched" and parts[1] in public_folders:
        return "dlsched/" + parts[1]
    if len(parts) >= 2 and parts[0] in src_folders:
        return parts[0]
    return None


def build_graph(root):
    src = os.path.join(root, "src")
    public = os.path.join(root, "include", "dlsched")
    src_folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    public_folders = {d for d in os.listdir(public) if os.path.isdir(os.path.join(public, d))}
    graph = {n: set() for n in src_folders}
    graph.update({"dlsched/" + n: set() for n in public_folders})
    for top in (src, public):
        for dirpath, _, files in os.walk(top):
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                if os.path.dirname(path) == top:
                    continue  # not in a folder
                here = node_of_file(root, path)
                with open(path, encoding="utf-8") as f:
                    for spelling in INCLUDE.findall(f.read()):
                        there = node_of_include(spelling, src_folders, public_folders)
                        if there is not None and there != here:
                            graph[here].add(there)
    return graph


def find_cycle(graph):
    """Returns one cycle as a list of nodes (first == last), or None."""
    state = {}  # absent: unvisited, 1: on the path, 2: done
    path = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for succ in sorted(graph[node]):
            if state.get(succ) == 1:
                return path[path.index(succ):] + [succ]
            if succ not in state:
                found = visit(succ)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    graph = build_graph(root)
    for node in sorted(graph):
        print(f"{node} -> {' '.join(sorted(graph[node])) or '(nothing)'}")
    cycle = find_cycle(graph)
    if cycle:
        print("cycle: " + " -> ".join(cycle), file=sys.stderr)
        return 1
    print("no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
