#!/usr/bin/env python3
"""Tests of check_openapi.py: each broken document is reported, a sound one is not."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_openapi  # noqa: E402


def sound():
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/v1/jobs/{id}": {
                "get": {
                    "parameters": [{"$ref": "#/components/parameters/Id"}],
                    "responses": {"200": {"$ref": "#/components/responses/Job"}},
                },
            },
        },
        "components": {
            "parameters": {"Id": {"name": "id", "in": "path", "required": True}},
            "responses": {"Job": {"description": "a job"}},
        },
    }


class CheckOpenApiTest(unittest.TestCase):
    def test_sound_document_passes(self):
        self.assertEqual(check_openapi.check(sound()), [])

    def test_each_fault_is_reported(self):
        cases = [
            ("version", lambda d: d.update(openapi="2.0"), "openapi"),
            ("no info title", lambda d: d["info"].pop("title"), "info"),
            ("no responses", lambda d: d["paths"]["/v1/jobs/{id}"]["get"].pop("responses"),
             "no responses"),
            ("bad status", lambda d: d["paths"]["/v1/jobs/{id}"]["get"]["responses"].update(
                {"20x": {"description": "x"}}), "not a status code"),
            ("dangling ref", lambda d: d["components"].pop("responses"), "does not resolve"),
            ("undeclared path parameter",
             lambda d: d["paths"]["/v1/jobs/{id}"]["get"].pop("parameters"), "path parameter"),
            ("path without slash", lambda d: d["paths"].update({"v1": {}}), "start with"),
        ]
        for name, breakit, want in cases:
            with self.subTest(name):
                doc = sound()
                breakit(doc)
                problems = check_openapi.check(doc)
                self.assertTrue(any(want in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
