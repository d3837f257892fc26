#!/usr/bin/env bash
# Runs the Python client's tests against a live `mnemos serve` the tests start themselves.
# Run from the repository root:  clients/python/run_tests.sh [pytest args…]
#
# Environment: MNEMOS_BIN (default target/release/mnemos), MNEMOS_PY_VENV (default
# clients/python/.venv), PYTHON (default python3).
set -euo pipefail

here="clients/python"
default_venv="$here/.venv"
venv="${MNEMOS_PY_VENV:-$default_venv}"
python="${PYTHON:-python3}"
export MNEMOS_BIN="${MNEMOS_BIN:-$PWD/target/release/mnemos}"
export PIP_ROOT_USER_ACTION="${PIP_ROOT_USER_ACTION:-ignore}"

if [[ ! -f "$here/pyproject.toml" ]]; then
    echo "run_tests.sh: run me from the repository root" >&2
    exit 2
fi

# A venv is usable when its python runs pip.
venv_ok() {
    [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -m pip --version >/dev/null 2>&1
}

# Make the venv. Debian's python3 without python3-venv has no ensurepip, so a plain venv
# fails; a venv that sees the system site-packages can still use the system's pip.
make_venv() {
    venv_ok && return 0
    if [[ -e "$venv" && "$venv" != "$default_venv" ]]; then
        echo "run_tests.sh: MNEMOS_PY_VENV=$venv exists but is not a usable venv" >&2
        exit 2
    fi
    rm -rf "$venv"
    "$python" -m venv "$venv" >/dev/null 2>&1 && venv_ok && return 0
    rm -rf "$venv"
    "$python" -m venv --without-pip --system-site-packages "$venv" >/dev/null 2>&1 \
        && venv_ok && return 0
    rm -rf "$venv"
    return 1
}

if make_venv; then
    py="$venv/bin/python"
    "$py" -m pip install -q --disable-pip-version-check -e "$here[test]"
else
    # No venv at all: install the package and its test dependencies into a directory of
    # their own and put it on the path (never into the system's site-packages).
    target="$here/.deps"
    echo "run_tests.sh: no virtualenv available; installing into $target" >&2
    "$python" -m pip install -q --disable-pip-version-check --upgrade --target "$target" \
        "$here[test]"
    export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}"
    py="$python"
fi

exec "$py" -m pytest -q "$here/tests" "$@"
