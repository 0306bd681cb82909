#!/usr/bin/env python3
"""Checks that an OpenAPI 3 document is valid YAML with the structure OpenAPI 3.0 requires.

Usage: check_openapi.py FILE. Exit 0 when it holds; 1 with one line per problem otherwise.
Checked: the YAML parses (PyYAML's safe loader); `openapi` is a 3.0.x or 3.1.x version string;
`info` has `title` and `version`; `paths` maps paths starting with '/' to path items whose
operations (get, put, post, delete, options, head, patch, trace) each have a non-empty
`responses` whose keys are status codes (or 1XX-5XX ranges, or 'default'), each with a
`description`; every path parameter named in a path template is declared `in: path` and
`required: true`; and every `$ref` is a local JSON pointer ('#/...') that resolves.
"""

import re
import sys

import yaml

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
STATUS = re.compile(r"^([1-5][0-9][0-9]|[1-5]XX|default)$")


def resolve(doc, ref):
    """The object a local $ref points at, or None."""
    if not ref.startswith("#/"):
        return None
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def deref(doc, node):
    """`node`, or what its $ref points at (one level)."""
    if isinstance(node, dict) and "$ref" in node:
        target = resolve(doc, node["$ref"])
        return target if target is not None else {}
    return node


def check_refs(doc, node, where, problems):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                if not isinstance(value, str) or resolve(doc, value) is None:
                    problems.append(f"{where}: $ref {value!r} does not resolve")
            else:
                check_refs(doc, value, f"{where}/{key}", problems)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            check_refs(doc, value, f"{where}/{i}", problems)


def check(doc):
    problems = []
    if not isinstance(doc, dict):
        return ["the document is not a mapping"]
    version = doc.get("openapi")
    if not isinstance(version, str) or not re.match(r"^3\.(0|1)\.\d+$", version):
        problems.append(f"openapi: want a 3.0.x or 3.1.x version string, got {version!r}")
    info = doc.get("info")
    if not isinstance(info, dict) or not isinstance(info.get("title"), str) or \
            not isinstance(info.get("version"), str):
        problems.append("info: want a mapping with string title and version")
    paths = doc.get("paths")
    if not isinstance(paths, dict) or not paths:
        problems.append("paths: want a non-empty mapping")
        paths = {}
    for path, item in paths.items():
        if not isinstance(path, str) or not path.startswith("/"):
            problems.append(f"paths: {path!r} does not start with '/'")
            continue
        if not isinstance(item, dict):
            problems.append(f"paths/{path}: not a mapping")
            continue
        operations = {m: op for m, op in item.items() if m in METHODS}
        if not operations:
            problems.append(f"paths/{path}: no operation")
        shared = [deref(doc, p) for p in item.get("parameters", [])]
        for method, op in operations.items():
            where = f"paths/{path}/{method}"
            if not isinstance(op, dict):
                problems.append(f"{where}: not a mapping")
                continue
            responses = op.get("responses")
            if not isinstance(responses, dict) or not responses:
                problems.append(f"{where}: no responses")
                responses = {}
            for code, response in responses.items():
                if not STATUS.match(str(code)):
                    problems.append(f"{where}/responses: {code!r} is not a status code")
                response = deref(doc, response)
                if not isinstance(response, dict) or "description" not in response:
                    problems.append(f"{where}/responses/{code}: no description")
            params = shared + [deref(doc, p) for p in op.get("parameters", [])]
            declared = {p.get("name") for p in params
                        if isinstance(p, dict) and p.get("in") == "path" and
                        p.get("required") is True}
            for name in re.findall(r"\{([^}]+)\}", path):
                if name not in declared:
                    problems.append(f"{where}: path parameter {name!r} is not declared "
                                    "'in: path' with 'required: true'")
    check_refs(doc, doc, "#", problems)
    return problems


def main():
    if len(sys.argv) != 2:
        print("usage: check_openapi.py FILE", file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        print(f"{sys.argv[1]}: {e}")
        return 1
    problems = check(doc)
    for p in problems:
        print(f"{sys.argv[1]}: {p}")
    if not problems:
        print(f"{sys.argv[1]}: OpenAPI {doc['openapi']}, {len(doc['paths'])} paths: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
