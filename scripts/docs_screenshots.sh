#!/usr/bin/env bash
# Build the docs site and take screenshots of pages in headless Chromium (Debian: apt-get install chromium).
#   scripts/docs_screenshots.sh OUT_DIR [PAGE ...]      PAGE as its URL path, e.g. jobs/score/
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/docs_screenshots.sh OUT_DIR [PAGE ...]}; shift
pages=("${@:-jobs/score/ worlds/navigation/}")
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$site" >/dev/null 2>&1 &
server=$!
trap 'kill $server; rm -rf "$site"' EXIT
sleep 1
mkdir -p "$out"
for page in ${pages[@]}; do
    name=$(echo "${page%/}" | tr '/' '-')
    chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1600 \
        --screenshot="$out/$name.png" "http://127.0.0.1:$port/$page" 2>/dev/null
    echo "wrote $out/$name.png"
done
