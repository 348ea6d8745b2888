#!/usr/bin/env bash
# A well-behaved client's p99 latency on the quotes service alone and beside each attack of issue
# 23 on its streams and caches (distinct Host values on short streams, on cached quotes and
# CoinGecko bodies; every coin in every currency streamed). Target: p99 under attack <= 3x alone.
# The service runs from the sources (tsx); `--help` lists the options. See bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --conditions=source --import tsx bench/quotes-hostile.mjs "$@"
