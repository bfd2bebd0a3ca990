#!/usr/bin/env python3
"""Validate JSON documents against a JSON Schema (the subset results.schema.json uses).

    check_json.py [--schema results.schema.json] FILE...

Exit status 0 when every FILE is valid, 1 otherwise (each error printed with its JSON
path). The subset: type (one or a list), const, enum, required, properties,
additionalProperties (false or a schema), items, minimum, maximum, pattern. Only the
Python standard library is used (CI has no jsonschema), so the keywords this file does not
know are refused rather than ignored: a schema using them must extend it first.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN = {"$schema", "$id", "title", "description", "type", "const", "enum", "required", "properties",
         "additionalProperties", "items", "minimum", "maximum", "pattern"}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value, t):
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[t])


def validate(value, schema, path="$"):
    """The list of errors of `value` against `schema` ("<path>: <why>")."""
    unknown = set(schema) - KNOWN
    if unknown:
        return ["%s: schema keyword(s) %s not supported by check_json.py" % (path, sorted(unknown))]
    errs = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, t) for t in types):
            return ["%s: %r is not of type %s" % (path, value, " or ".join(types))]
    if "const" in schema and value != schema["const"]:
        errs.append("%s: %r is not %r" % (path, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        errs.append("%s: %r is not one of %r" % (path, value, schema["enum"]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append("%s: %r < %r" % (path, value, schema["minimum"]))
        if "maximum" in schema and value > schema["maximum"]:
            errs.append("%s: %r > %r" % (path, value, schema["maximum"]))
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        errs.append("%s: %r does not match %s" % (path, value, schema["pattern"]))
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errs.append("%s: %r missing" % (path, k))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                errs += validate(v, props[k], "%s.%s" % (path, k))
            elif extra is False:
                errs.append("%s: unexpected %r" % (path, k))
            elif isinstance(extra, dict):
                errs += validate(v, extra, "%s.%s" % (path, k))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errs += validate(v, schema["items"], "%s[%d]" % (path, i))
    return errs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schema", default=os.path.join(HERE, "results.schema.json"))
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    with open(a.schema) as f:
        schema = json.load(f)
    bad = 0
    for name in a.files:
        try:
            with open(name) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("%s: not JSON: %s" % (name, e))
            bad += 1
            continue
        errs = validate(doc, schema)
        for e in errs[:20]:
            print("%s: %s" % (name, e))
        bad += bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
