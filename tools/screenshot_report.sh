#!/bin/bash
# Looks at a study's report as a person would: Debian's chromium, headless, renders report.html to
# PNG screenshots (the top of the page and a tall one of all of it) and to a PDF, beside the report.
#   bash tools/screenshot_report.sh [retrograd-study]
# Installs chromium (apt) when it is missing.
set -euo pipefail
dir=${1:-retrograd-study}
page=$(realpath "$dir/report.html")
if ! command -v chromium > /dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
fi
shoot() {  # name width height
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$2,$3" \
    --screenshot="$dir/$1" "file://$page" 2> /dev/null
}
shoot screenshot-top.png 1280 900
shoot screenshot-full.png 1280 9000
chromium --headless --no-sandbox --disable-gpu --print-to-pdf="$dir/report.pdf" "file://$page" 2> /dev/null
ls -l "$dir"/screenshot-*.png "$dir/report.pdf"
