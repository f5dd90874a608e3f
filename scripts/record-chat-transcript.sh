#!/bin/sh
# Records the infer chat transcript shown in docs/cli.md: a tmux session
# (a real terminal) runs infer chat on stories260K, two turns are typed,
# then Ctrl-D; the pane is printed. Needs tmux and ../shared/models.
# Usage: scripts/record-chat-transcript.sh (from the repository root).
set -eu
bin=$(mktemp -d)/infer
go build -o "$bin" ./cmd/infer
s=stride-chat-$$
tmux new-session -d -s "$s" -x 100 -y 12 "$bin chat --config configs/stories260k.yaml -n 48 --temperature 0; sleep 5"
sleep 1
tmux send-keys -t "$s" 'Hello' Enter
sleep 2
tmux send-keys -t "$s" 'Tell me about the park' Enter
sleep 2
tmux send-keys -t "$s" C-d
sleep 1
tmux capture-pane -p -t "$s" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
tmux kill-session -t "$s"
rm -rf "$(dirname "$bin")"
