#!/usr/bin/env python3
"""Runs a GitHub Actions workflow of one job on this machine, as GitHub's runner would, for
scripts/install-test.sh: each `run:` step with bash (-eo pipefail) and the workflow's and the
step's `env:`, RUNNER_TEMP, GITHUB_PATH, GITHUB_STEP_SUMMARY; after a failure only `always()`
steps run. Of GitHub's own actions, the checkout is skipped (the project is already there, its
last commit the pull request's) and upload-artifact copies its file into SCRATCH/artifact. `gh`
is a stand-in that keeps the comment it is given in SCRATCH/comment.md. PATH has no pushcamp
but what the workflow adds.

    run-workflow.py WORKFLOW PROJECT SCRATCH

Writes SCRATCH/ran (the steps run, one per line) and prints each step's output; exits 1 naming
the first step that failed, else 0. Tests/PushcampCLITests/WorkflowCLITests.swift has the same
runner for the test suite.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import yaml


def holds(condition, failed):
    """The conditions the scaffold uses, joined by &&; anything else is an error."""
    for term in (t.strip() for t in condition.split("&&")):
        if term == "always()":
            continue
        if term == "success()":
            if failed:
                return False
            continue
        if term == "failure()":
            if not failed:
                return False
            continue
        match = re.fullmatch(r"github\.event_name == '([a-z_]+)'", term)
        if not match:
            sys.exit(f"run-workflow.py: unknown condition {term}")
        if match.group(1) != "pull_request":
            return False
    return True


def main():
    workflow_file, project, scratch = (pathlib.Path(p).resolve() for p in sys.argv[1:4])
    temp, tools = scratch / "runner-temp", scratch / "tools"
    temp.mkdir(parents=True)
    tools.mkdir()
    gh = tools / "gh"
    gh.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> '{scratch}/gh-calls'\n"
        "while [ $# -gt 0 ]; do\n"
        f"  if [ \"$1\" = --body-file ]; then cp \"$2\" '{scratch}/comment.md'; fi\n"
        "  shift\n"
        "done\n"
    )
    gh.chmod(0o755)
    for name in ("github-path", "step-summary", "github-output"):
        (scratch / name).touch()
    workflow = yaml.safe_load(workflow_file.read_text())
    (job,) = workflow["jobs"].values()
    expressions = {
        "${{ github.token }}": "ghs_test",
        "${{ github.event.pull_request.number }}": "7",
        "${{ runner.temp }}": str(temp),
    }
    failed = None
    ran = []
    for step in job["steps"]:
        name = step.get("name") or step.get("run") or step.get("uses")
        if "if" in step:
            if not holds(step["if"], failed is not None):
                continue
        elif failed is not None:
            continue
        uses = step.get("uses")
        if uses is not None:
            if uses == "actions/upload-artifact@v4":
                ran.append(name)
                path = str(step.get("with", {}).get("path", ""))
                for expression, value in expressions.items():
                    path = path.replace(expression, value)
                if os.path.exists(path):
                    shutil.copy(path, scratch / "artifact")
            elif uses != "actions/checkout@v4":
                sys.exit(f"run-workflow.py: the runner does not know {uses}")
            continue
        script = step["run"]
        if "${{" in script:
            sys.exit(f"run-workflow.py: {name}: an expression in a script is shell injection; use env:")
        env = {
            "HOME": str(scratch), "RUNNER_TEMP": str(temp),
            "GITHUB_PATH": str(scratch / "github-path"),
            "GITHUB_STEP_SUMMARY": str(scratch / "step-summary"),
            "GITHUB_OUTPUT": str(scratch / "github-output"),
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_WORKSPACE": str(project),
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*",
        }
        env.update({k: str(v) for k, v in workflow.get("env", {}).items()})
        env.update({k: expressions.get(str(v), str(v)) for k, v in step.get("env", {}).items()})
        added = [line for line in (scratch / "github-path").read_text().splitlines() if line]
        env["PATH"] = ":".join(list(reversed(added)) + [str(tools), "/usr/bin", "/bin"])
        ran.append(name)
        result = subprocess.run(
            ["/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        print(f"== {name}: exit {result.returncode}\n{result.stdout}", end="")
        if result.returncode != 0 and failed is None:
            failed = name
    (scratch / "ran").write_text("".join(f"{name}\n" for name in ran))
    if failed is not None:
        print(f"run-workflow.py: step failed: {failed}")
        sys.exit(1)


if __name__ == "__main__":
    main()
