# Sourced by scripts/setup and scripts/tck: venv_with DIR REQUIREMENTS creates the venv (with
# $python, default python3) and installs the pinned requirements whenever they changed.
venv_with() {
  local dir=$1 reqs=$2 want stamp
  stamp="$dir/.requirements.sha256"
  [ -x "$dir/bin/python" ] || { echo "setup: creating venv at $dir"; "${python:-python3}" -m venv "$dir"; }
  want=$(sha256sum "$reqs" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing $(basename "$(dirname "$reqs")")/$(basename "$reqs") into $dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs"
    echo "$want" > "$stamp"
  fi
}

