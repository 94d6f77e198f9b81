"""Runs one test file of tests/python under pytest for CTest: exit 77 (CTest's
SKIP_RETURN_CODE for these tests) when pytest is not installed."""
import sys

try:
    import pytest
except ImportError:
    print("pytest is not installed (Debian: python3-pytest): skipped")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", sys.argv[1].rsplit("/", 1)[0]] + sys.argv[1:]))
