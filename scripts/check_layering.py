#!/usr/bin/env python3
"""Prints the folder-level include graph of src/ and include/dlsched/; fails on a cycle.

Usage: check_layering.py [SOURCE_DIR]   (default: the parent of this script's folder)

A node is a top-level folder of src/, a folder of include/dlsched/, or, for the folders in
SPLIT (src/daemon), each subfolder on its own ("daemon/core", "daemon/exec", ...; the files
directly in the folder are the node "daemon"). An edge A -> B means a file under A has
`#include "B/..."` (or `"dlsched/B/..."` for include/dlsched/B, `"daemon/core/..."` for
daemon/core).
Includes of test/ helpers ("support/...") and of third-party headers are not nodes.

Within a SPLIT folder, LAYERS gives the direction: a subfolder may include only the subfolders
listed before it (a subfolder not listed is held to the no-cycle rule only). Exit status 0 when
the graph has no cycle and no include against LAYERS, 1 with the cycle or the includes printed.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# Folders of src/ whose subfolders are nodes of their own.
SPLIT = {"daemon"}
# Their subfolders, lowest first (docs/architecture.md, "The live daemon and its executors"):
# the job model, then the store and the executors, the scheduler thread, the HTTP API.
LAYERS = {"daemon": ["job", "store", "exec", "core", "api"]}


def subfolders(path):
    return {d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d))}


def node_of_file(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "src":
        if rel[1] in SPLIT and len(rel) > 3:
            return rel[1] + "/" + rel[2]
        return rel[1]
    return "dlsched/" + rel[2]  # include/dlsched/<folder>/...


def node_of_include(spelling, src_folders, split_folders, public_folders):
    parts = spelling.split("/")
    if len(parts) >= 3 and parts[0] == "dlsched" and parts[1] in public_folders:
        return "dlsched/" + parts[1]
    if len(parts) >= 3 and parts[1] in split_folders.get(parts[0], ()):
        return parts[0] + "/" + parts[1]
    if len(parts) >= 2 and parts[0] in src_folders:
        return parts[0]
    return None


def build_graph(root):
    src = os.path.join(root, "src")
    public = os.path.join(root, "include", "dlsched")
    src_folders = subfolders(src)
    public_folders = subfolders(public)
    split_folders = {n: subfolders(os.path.join(src, n)) for n in SPLIT & src_folders}
    graph = {n: set() for n in src_folders}
    for n, subs in split_folders.items():
        graph.update({n + "/" + s: set() for s in subs})
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
                        there = node_of_include(spelling, src_folders, split_folders,
                                                public_folders)
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


def upward_edges(graph, layers=None):
    """The edges from a subfolder to one listed after it in LAYERS, as (from, to) pairs."""
    layers = LAYERS if layers is None else layers
    rank = {f"{top}/{sub}": i for top, subs in layers.items() for i, sub in enumerate(subs)}
    return sorted((a, b) for a in graph for b in graph[a]
                  if a in rank and b in rank and a.split("/")[0] == b.split("/")[0]
                  and rank[b] > rank[a])


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
    upward = upward_edges(graph)
    for a, b in upward:
        top = a.split("/")[0]
        print(f"upward include: {a} -> {b} (layers of {top}, lowest first: "
              f"{' '.join(LAYERS[top])})", file=sys.stderr)
    if upward:
        return 1
    print("no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
