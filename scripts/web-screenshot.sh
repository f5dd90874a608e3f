#!/usr/bin/env bash
# Regenerates docs/explorer-mha.png, the layout explorer on its MHA preset
# (the README and docs/explorer.md show it): builds the page, serves it
# with infer explore on a free local port, and has headless Chromium
# (Debian's chromium; --no-sandbox because CI runs as root) take the
# picture. Step 5 is drawn: q = Q.view(...).transpose(1, 2), the head split.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
browser="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
[ -n "$browser" ] || { echo "web-screenshot: no chromium (apt-get install chromium)" >&2; exit 1; }

out="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
./scripts/build-web.sh "$out/dist"
go build -o "$out/infer" ./cmd/infer
port=$(( 20000 + RANDOM % 20000 ))
"$out/infer" explore --dir "$out/dist" --addr "127.0.0.1:$port" > "$out/log" 2>&1 &
server=$!
for _ in $(seq 50); do grep -qs serving "$out/log" && break; sleep 0.1; done

"$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
	--user-data-dir="$out/profile" --hide-scrollbars --force-device-scale-factor=1 \
	--window-size=1600,1450 --virtual-time-budget=20000 \
	--screenshot="$root/docs/explorer-mha.png" "http://127.0.0.1:$port/index.html?step=5" 2>/dev/null
echo "wrote docs/explorer-mha.png"
