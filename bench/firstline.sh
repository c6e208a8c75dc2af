#!/usr/bin/env bash
# firstline.sh COMMAND...: run COMMAND, wait for the first line it
# prints, then stop it and exit 0 (1 when it ended without printing a
# line). Timing firstline.sh times a command's first streamed line.
set -euo pipefail
exec 3< <(exec "$@" 2>/dev/null)
pid=$!
read -r -u 3 _ || exit 1
kill "$pid" 2>/dev/null || true
