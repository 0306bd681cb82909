#!/usr/bin/env python3
"""Tests of check_layering.py on small source trees: cycles and upward includes fail."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_layering  # noqa: E402


class CheckLayeringTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        os.makedirs(os.path.join(self.root, "include", "dlsched", "model"))
        self.write("include/dlsched/model/job.h", "")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def daemon(self, includes):
        """A daemon tree: {subfolder: [included spellings]}, one file per subfolder."""
        for sub in ("api", "core", "exec", "job", "store"):
            text = "".join(f'#include "{i}"\n' for i in includes.get(sub, []))
            self.write(f"src/daemon/{sub}/{sub}.cc", text)

    def run_script(self):
        return subprocess.run([sys.executable, os.path.join(HERE, "check_layering.py"),
                               self.root], capture_output=True, text=True)

    def test_daemon_subfolders_are_nodes(self):
        self.daemon({"api": ["daemon/core/daemon.h"], "core": ["daemon/exec/e.h",
                                                               "dlsched/model/job.h"]})
        self.write("src/daemon/serve_command.cc", '#include "daemon/api/http_api.h"\n')
        self.write("src/cli/commands.cc", '#include "daemon/serve_command.h"\n')
        graph = check_layering.build_graph(self.root)
        self.assertEqual(graph["daemon/api"], {"daemon/core"})
        self.assertEqual(graph["daemon/core"], {"daemon/exec", "dlsched/model"})
        self.assertEqual(graph["daemon"], {"daemon/api"})
        self.assertEqual(graph["cli"], {"daemon"})
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no cycle", result.stdout)

    def test_a_cycle_between_subfolders_fails(self):
        self.daemon({"api": ["daemon/core/daemon.h"], "core": ["daemon/api/job_request.h"]})
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("cycle: daemon/api -> daemon/core -> daemon/api", result.stderr)

    def test_an_upward_include_without_a_cycle_fails(self):
        self.daemon({"exec": ["daemon/core/daemon.h"]})
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("upward include: daemon/exec -> daemon/core", result.stderr)

    def test_an_unlisted_subfolder_is_held_to_the_cycle_rule_only(self):
        self.daemon({"job": ["daemon/extra/x.h"]})
        self.write("src/daemon/extra/x.cc", '#include "daemon/api/a.h"\n')
        self.assertEqual(self.run_script().returncode, 0)
        self.write("src/daemon/api/a.cc", '#include "daemon/extra/x.h"\n')
        self.assertEqual(self.run_script().returncode, 1)


if __name__ == "__main__":
    unittest.main()
