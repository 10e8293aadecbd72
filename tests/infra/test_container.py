"""The Dockerfile's multi-arch build stage (no Docker engine here: hadolint checks the file, this
runs its platform mapping): each platform BuildKit names gets the musl target whose C compiler the
stage sets, and an unknown one stops the build with a message."""
import re
import subprocess
from pathlib import Path

import pytest

DOCKERFILE = (Path(__file__).parents[2] / "Dockerfile").read_text()


def build_stage():
    return DOCKERFILE.split("FROM scratch")[0]


def platform_mapping():
    """The build stage's `case` over TARGETARCH, as the shell runs it."""
    run = re.search(r"RUN (case .*?esac)", build_stage(), re.S)
    assert run, "the build stage maps TARGETARCH with a case"
    return run.group(1).replace("\\\n", "\n") + '\necho "${arch}-unknown-linux-musl"'


@pytest.mark.parametrize("arch,target", [("amd64", "x86_64-unknown-linux-musl"), ("arm64", "aarch64-unknown-linux-musl"),
                                         ("", "x86_64-unknown-linux-musl")])
def test_each_platform_builds_its_musl_target_with_musl_gcc(arch, target):
    out = subprocess.run(["sh", "-c", platform_mapping()], env={"TARGETARCH": arch}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == target
    compiler = f"CC_{target.replace('-', '_')}=musl-gcc"
    assert compiler in build_stage(), f"{compiler} is not set"


def test_an_unknown_platform_stops_the_build():
    out = subprocess.run(["sh", "-c", platform_mapping()], env={"TARGETARCH": "s390x"}, capture_output=True, text=True)
    assert out.returncode != 0 and "no musl target for s390x" in out.stderr
