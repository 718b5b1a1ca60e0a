"""``_internal.memory``: glibc keeps freed memory where the command asks it to."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from drivemetrics._internal.memory import keep_freed_memory


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only"
)
def test_keep_freed_memory_is_applied_under_glibc():
    # in a child process: the setting lasts for the process that makes it
    code = "from drivemetrics._internal.memory import keep_freed_memory; print(keep_freed_memory())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


@pytest.mark.skipif(sys.platform.startswith("linux"), reason="elsewhere it does nothing")
def test_keep_freed_memory_does_nothing_outside_linux():
    assert keep_freed_memory() is False
